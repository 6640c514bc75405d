"""A dataset's files read into arrays: tables, labels, dissimilarities, graphs, images, matrices, the catalog."""
