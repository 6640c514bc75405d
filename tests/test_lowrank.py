"""Truncated-SVD kernels of Frank et al. 2011, Sec. 4: hand-worked toy cases and direct re-implementations (one loop per k)."""

from __future__ import annotations

import numpy as np
import pytest

from ordercube.tasks.algorithms.lowrank import (
    boolean_denoise,
    boolean_svd_transfer_costs,
    coverage_shares,
    denoise_errors,
    denoise_psnrs,
    fit_low_rank,
    increments,
    nearest_rows,
    opcv_errors,
    project,
    psnr,
    reconstruct,
    svd_transfer_costs,
)
from ordercube.tasks.criteria.rank_rules import coverage_rank, increment_rank, opcv_rank
from ordercube.tasks.datasets.patches import flip_noise, random_patches, tile_patches, untile

# blockdiag(ones(3, 3), ones(2, 2), 1): singular values 3, 2, 1 with the blocks as the rank-one terms
BLOCKS = np.zeros((6, 6), dtype=np.uint8)
BLOCKS[:3, :3] = 1
BLOCKS[3:5, 3:5] = 1
BLOCKS[5, 5] = 1


# ------------------------------------------------------------------------------------------------ patches

def test_tiling_is_row_major_over_tiles_and_round_trips():
    image = np.arange(24.0).reshape(4, 6)
    patches = tile_patches(image, 2)
    assert patches.shape == (6, 4)
    assert patches[0].tolist() == [0, 1, 6, 7]
    assert patches[1].tolist() == [2, 3, 8, 9]
    assert patches[3].tolist() == [12, 13, 18, 19]
    np.testing.assert_array_equal(untile(patches, (4, 6), 2), image)


@pytest.mark.parametrize("image, size", [
    (np.zeros((4, 4, 3)), 2),  # colour, not grey
    (np.zeros(16), 4),  # 1-D
    (np.zeros((4, 6)), 8),  # smaller than a patch
    (np.zeros((4, 6)), 4),  # 4 does not divide 6
    (np.zeros((4, 4)), 0),
])
def test_tiling_refuses_bad_images(image, size):
    with pytest.raises(ValueError):
        tile_patches(image, size)


def test_untile_refuses_a_mismatched_patch_matrix():
    with pytest.raises(ValueError, match="expected patches of shape"):
        untile(np.zeros((5, 4)), (4, 6), 2)


def test_random_patches_are_the_image_at_their_corners_and_reproducible():
    image = np.arange(70.0).reshape(7, 10)
    patches, corners = random_patches(image, 3, 50, np.random.default_rng(1))
    assert patches.shape == (50, 9) and corners.shape == (50, 2)
    assert corners.min() >= 0 and corners[:, 0].max() <= 4 and corners[:, 1].max() <= 7
    for patch, (row, column) in zip(patches, corners):
        np.testing.assert_array_equal(patch, image[row:row + 3, column:column + 3].ravel())
    again, _ = random_patches(image, 3, 50, np.random.default_rng(1))
    np.testing.assert_array_equal(patches, again)


def test_psnr_by_hand():
    clean = np.zeros((2, 2))
    noisy = np.array([[1.0, 0.0], [0.0, 1.0]])  # MSE = 1/2
    assert psnr(noisy, clean) == pytest.approx(20 * np.log10(255) + 10 * np.log10(2), abs=1e-12)  # 51.1411 dB
    assert psnr(clean + 0.1, clean, peak=1.0) == pytest.approx(20.0)
    assert psnr(clean, clean) == np.inf


def test_denoise_psnrs_equal_the_image_psnr_of_each_reconstruction():
    rng = np.random.default_rng(2)
    grid = np.linspace(0, 3, 16)
    clean = 100 + 50 * np.sin(grid[:, None]) * np.cos(2 * grid[None, :])
    noisy = clean + rng.normal(0, 10, clean.shape)
    X = tile_patches(noisy, 4)
    lowrank = fit_low_rank(X)
    ks = [0, 1, 2, 5, 16]
    direct = [psnr(untile(reconstruct(lowrank, k), clean.shape, 4), clean) for k in ks]
    np.testing.assert_allclose(denoise_psnrs(X, tile_patches(clean, 4), ks), direct, rtol=1e-10)
    assert direct[-1] == pytest.approx(psnr(noisy, clean))  # full rank gives the noisy image back


# ---------------------------------------------------------------------------------- transfer cost, eq. (7)

def test_nearest_rows_match_brute_force():
    rng = np.random.default_rng(3)
    X1, X2 = rng.normal(size=(300, 5)), rng.normal(size=(200, 5))
    brute = ((X2[:, None, :] - X1[None, :, :]) ** 2).sum(axis=2).argmin(axis=1)
    np.testing.assert_array_equal(nearest_rows(X1, X2), brute)


def test_nearest_rows_send_exact_ties_to_the_lowest_index():
    # ‖x' - a‖² = ‖x' - b‖² = 2 exactly, but ‖x'‖² ~ 1.5e18 is far beyond 2⁵³: the expansion ‖x'‖² - 2x'·a + ‖a‖²
    # alone gives 256 and 0, and would choose b
    x = np.array([53527000.0, 1242833000.0, 82844000.0])
    a, b = x + [1, 0, 1], x - [1, 0, 1]
    X2 = np.array([x, [3.0, 3.0, 3.0]])
    assert nearest_rows(np.array([a, b, [3.0, 3.0, 3.0], [3.0, 3.0, 3.0]]), X2).tolist() == [0, 2]
    assert nearest_rows(np.array([[3.0, 3.0, 3.0], b, [3.0, 3.0, 3.0], a]), X2).tolist() == [1, 0]


def direct_transfer_costs(X1, X2, ks):
    """Eq. (7) literally: brute-force nearest neighbours, then one reconstruction per k."""
    Vt = np.linalg.svd(X1, full_matrices=False)[2]
    nearest = ((X2[:, None, :] - X1[None, :, :]) ** 2).sum(axis=2).argmin(axis=1)
    costs = []
    for k in ks:
        reconstruction = X1[nearest] @ Vt[:k].T @ Vt[:k]
        costs.append(((X2 - reconstruction) ** 2).sum(axis=1).mean())
    return np.array(costs)


def test_svd_transfer_costs_equal_the_direct_loop():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(200, 16)) @ rng.normal(size=(16, 16)) + 3.0  # uncentred, correlated
    X1, X2 = X[:100], X[100:]
    ks = np.arange(17)
    costs = svd_transfer_costs(X1, X2, ks)
    np.testing.assert_allclose(costs, direct_transfer_costs(X1, X2, ks), rtol=1e-10)
    assert costs[0] == pytest.approx((X2 ** 2).sum(axis=1).mean())
    assert svd_transfer_costs(X1, X2, [16, 40, 3]).tolist() == [costs[16], costs[16], costs[3]]  # k > r is the fit


def test_svd_transfer_costs_with_fewer_rows_than_features():
    rng = np.random.default_rng(5)
    X1, X2 = rng.normal(size=(6, 10)), rng.normal(size=(9, 10))
    ks = np.arange(7)
    np.testing.assert_allclose(svd_transfer_costs(X1, X2, ks), direct_transfer_costs(X1, X2, ks), rtol=1e-10)


def test_svd_transfer_cost_of_a_half_on_itself_is_zero_at_full_rank():
    X = np.random.default_rng(6).normal(size=(100, 16))
    costs = svd_transfer_costs(X, X, np.arange(1, 17))
    assert costs[-1] == 0.0
    assert np.all(np.diff(costs) < 0)  # on itself the transfer cost is the training cost, decreasing in k
    wide = X[:10]  # r = 10 < 16: the residual outside the span is computed, not cancelled
    assert svd_transfer_costs(wide, wide, [10])[0] < 1e-20 * (wide ** 2).sum()


def test_project_is_the_reconstruction_of_the_fitted_rows():
    X = np.random.default_rng(7).normal(size=(30, 8))
    lowrank = fit_low_rank(X)
    np.testing.assert_allclose(project(X, lowrank, 3), reconstruct(lowrank, 3), atol=1e-12)


# ---------------------------------------------------------------------------------------- Boolean matrices

def test_boolean_transfer_costs_by_hand():
    # X1's SVD: the [1,1,0] block (σ = 2) first, then the [0,0,1] block (σ = √2), then σ = 0
    X1 = np.array([[1, 1, 0], [1, 1, 0], [0, 0, 1], [0, 0, 1]])
    X2 = np.array([[1, 0, 1], [1, 1, 1], [0, 0, 0]])
    # Hamming-nearest rows: 2 (distance 1), 0 (tied with 1), 2. Rank 1 reconstructs rows 0-1 only.
    # k = 0: g = 0, costs 2, 3, 0. k = 1: 0 vs 101 = 2, 110 vs 111 = 1, 0 vs 000 = 0.
    # k = 2, 3: 001 vs 101 = 1, 110 vs 111 = 1, 001 vs 000 = 1.
    costs = boolean_svd_transfer_costs(X1, X2, [0, 1, 2, 3, 7])
    np.testing.assert_allclose(costs, [5 / 3, 1.0, 1.0, 1.0, 1.0], rtol=1e-12)
    with pytest.raises(ValueError, match="0/1"):
        boolean_svd_transfer_costs(X1 * 2, X2, [1])


def test_boolean_denoise_keeps_the_largest_blocks():
    expected = np.zeros((6, 6), dtype=np.uint8)
    expected[:3, :3] = 1
    denoised = boolean_denoise(BLOCKS, None, 1)
    assert denoised.dtype == np.uint8
    np.testing.assert_array_equal(denoised, expected)
    np.testing.assert_array_equal(boolean_denoise(BLOCKS, fit_low_rank(BLOCKS), 3), BLOCKS)
    with pytest.raises(ValueError, match="pass fit_low_rank"):
        boolean_denoise(BLOCKS[:5], fit_low_rank(BLOCKS), 1)


def test_denoise_errors_and_molloy_rules_by_hand():
    clean = BLOCKS.copy()
    clean[5, 5] = 0  # the 1 x 1 block is noise: g_0 misses 13 ones, g_1 misses 4, g_2 is exact, g_3 adds 1
    ks = [0, 1, 2, 3, 4]
    assert denoise_errors(BLOCKS, clean, ks).tolist() == [13, 4, 0, 1, 1]
    # ‖X‖₁ = 14: g_1 covers 9, g_2 13, g_3 all; the increments are 9, 4, 1, 0, 0 ones over 14
    np.testing.assert_allclose(coverage_shares(BLOCKS, ks), [0, 9 / 14, 13 / 14, 1, 1])
    np.testing.assert_allclose(increments(BLOCKS, ks), [9 / 14, 4 / 14, 1 / 14, 0, 0])
    assert coverage_rank(BLOCKS, ks) == 2
    assert coverage_rank(BLOCKS, ks, share=0.95) == 3
    assert coverage_rank(BLOCKS, [0, 1], share=0.95) is None
    assert increment_rank(BLOCKS, ks) == 3
    assert increment_rank(BLOCKS, ks, threshold=0.1) == 2


def test_flip_noise_flips_exactly_m_ones_and_m_zeros():
    rng = np.random.default_rng(8)
    clean = (rng.random((30, 20)) < 0.3).astype(np.uint8)
    noisy = flip_noise(clean, 0.1, np.random.default_rng(9))
    m = round(0.1 * clean.sum())
    assert noisy.dtype == np.uint8 and noisy.shape == clean.shape and m > 0
    assert np.count_nonzero((clean == 1) & (noisy == 0)) == m
    assert np.count_nonzero((clean == 0) & (noisy == 1)) == m
    np.testing.assert_array_equal(noisy, flip_noise(clean, 0.1, np.random.default_rng(9)))
    with pytest.raises(ValueError, match="zeros"):
        flip_noise(clean, 2.5, rng)  # more flips than zeros
    with pytest.raises(ValueError):
        flip_noise(clean, -0.1, rng)


@pytest.mark.parametrize("ks", [[-1, 2], [1.5], [], [[1, 2]]])
def test_ranks_are_refused_unless_integers_from_zero(ks):
    with pytest.raises(ValueError, match="ks"):
        svd_transfer_costs(np.eye(3), np.eye(3), ks)


# ---------------------------------------------------------------------------------------------------- OP-CV

def direct_opcv(X, ks, rng, permutations, fraction):
    """Owen-Perry's hold-out with ``numpy.linalg.pinv`` of the explicitly truncated D, one k at a time."""
    n, d = X.shape
    p, q = int(n * fraction), int(d * fraction)
    errors = np.empty((permutations, len(ks)))
    for t in range(permutations):
        Y = X[rng.permutation(n)][:, rng.permutation(d)]
        A, B, C, D = Y[:p, :q], Y[:p, q:], Y[p:, :q], Y[p:, q:]
        U, s, Vt = np.linalg.svd(D, full_matrices=False)
        for column, k in enumerate(ks):
            truncated = (U[:, :k] * s[:k]) @ Vt[:k]
            errors[t, column] = ((A - B @ np.linalg.pinv(truncated, rcond=1e-10) @ C) ** 2).sum()
    return errors


@pytest.mark.parametrize("fraction", [0.5, 0.2])
def test_opcv_equals_the_direct_pinv_implementation(fraction):
    rng = np.random.default_rng(10)
    X = rng.normal(size=(40, 30)) @ np.diag(np.linspace(3, 0.5, 30)) + (rng.random((40, 30)) < 0.3)
    ks = list(range(0, 11))
    ours = opcv_errors(X, ks, np.random.default_rng(11), permutations=4, fraction=fraction)
    assert ours.shape == (4, 11)
    np.testing.assert_allclose(ours, direct_opcv(X, ks, np.random.default_rng(11), 4, fraction), rtol=1e-8)


def test_opcv_recovers_the_rank_of_a_rank_three_matrix_plus_noise():
    rng = np.random.default_rng(12)
    X = rng.normal(size=(60, 3)) @ rng.normal(size=(3, 40)) + 0.1 * rng.normal(size=(60, 40))
    ks = list(range(0, 11))
    errors = opcv_errors(X, ks, np.random.default_rng(13))
    assert errors.shape == (20, 11)
    assert opcv_rank(errors, ks) == 3


def test_opcv_is_nan_above_the_rank_of_the_retained_block():
    rng = np.random.default_rng(14)
    X = rng.normal(size=(20, 2)) @ rng.normal(size=(2, 10))  # D is 10 x 5 of rank 2
    errors = opcv_errors(X, [0, 1, 2, 3, 6], rng, permutations=5)
    assert np.isnan(errors[:, 3:]).all() and np.isfinite(errors[:, :3]).all()
    assert errors[:, 2].max() < 1e-10 * errors[:, 0].min()  # an exact fit at the true rank
    assert opcv_rank(errors, [0, 1, 2, 3, 6]) == 2


def test_opcv_same_seed_same_permutations():
    X = np.random.default_rng(15).normal(size=(25, 12))
    first = opcv_errors(X, [1, 2, 3], np.random.default_rng(16), permutations=6)
    np.testing.assert_array_equal(first, opcv_errors(X, [1, 2, 3], np.random.default_rng(16), permutations=6))
    assert not np.array_equal(first, opcv_errors(X, [1, 2, 3], np.random.default_rng(17), permutations=6))


def test_opcv_rank_takes_the_lowest_median_with_ties_to_the_smallest_k():
    errors = [[1.0, 2.0, 2.0, np.nan], [3.0, 1.0, 1.0, 0.0], [2.0, 0.0, 0.0, 0.0]]  # medians 2, 1, 1, NaN
    assert opcv_rank(errors, [1, 3, 2, 4]) == 2
    assert opcv_rank([[np.nan]], [1]) is None


def test_opcv_refuses_blocks_that_leave_nothing_out():
    with pytest.raises(ValueError, match="fraction"):
        opcv_errors(np.ones((10, 4)), [1], np.random.default_rng(0), fraction=0.1)
