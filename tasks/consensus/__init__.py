"""Consensus clustering as pure kernels (Monti, Tamayo, Mesirov & Golub 2003; Wilkerson & Hayes 2010; Senbabaoglu,
Michailidis & Li 2014; Hennig 2007): from the resamples' stored assignments (an (R, N) array of clusters, -1
where an item was not drawn) to the consensus matrix, its CDF, area and Delta(K), PAC, the consensus partition
and the stability of its clusters and items. NumPy and SciPy only: no Dask, xarray, zarr or IO. SciPy is imported
by the functions that use it, so that importing this package (the criteria's registry does) loads NumPy alone.
"""

from __future__ import annotations

from ordercube.tasks.consensus.matrix import (
    AREA_METHODS, area_from_values, cdf_area, consensus_cdf, consensus_matrix, consensus_values, delta_area, pac,
    pac_from_values,
)
from ordercube.tasks.consensus.partition import (
    LINKAGES, cluster_consensus, clusterwise_jaccard, consensus_order, consensus_partition, consensus_tree,
    item_consensus, small_cluster_limit, small_clusters,
)
from ordercube.tasks.consensus.resamples import adjusted_rand, bootstrap_weights, resample_agreement

__all__ = ["AREA_METHODS", "LINKAGES", "adjusted_rand", "area_from_values", "bootstrap_weights", "cdf_area",
           "cluster_consensus", "clusterwise_jaccard", "consensus_cdf", "consensus_matrix", "consensus_order",
           "consensus_partition", "consensus_tree", "consensus_values", "delta_area", "item_consensus", "pac",
           "pac_from_values", "resample_agreement", "small_cluster_limit", "small_clusters"]
