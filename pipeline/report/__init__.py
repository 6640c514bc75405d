"""The report of a cube: the k table, the figures, the HTML page, the adaptive rule replayed."""
