"""Shared settings of the selective estimators' tests."""

# Short runs of every phase: these tests check the fit's workings, not the
# selection's stopping rule, which has tests of its own.
FAST = dict(n_pre_iter=30, n_select_iter=40, n_post_iter=30)


def assert_expected_size_kept(est):
    """keep="expected": the round(E|Z|) most probable candidates are kept."""
    lam = est.inclusion_probabilities_
    assert est.n_inducing_ == max(1, round(lam.sum()))
    assert lam[est.support_].min() >= lam[~est.support_].max()
