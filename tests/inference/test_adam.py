"""Adam's clip: what heavy-tailed gradients do to the moments, and what
ordinary ones do not."""

import numpy as np

from skgp_bayes.inference import adam_init, adam_update, maximize


def _run(directions, clip):
    state, path, x = adam_init(np.zeros(directions.shape[1])), [], 0.0
    for direction in directions:
        x = x + adam_update(state, direction, 0.01, clip=clip)
        path.append(x.copy())
    return np.array(path), state


def test_gaussian_gradients_pass_a_cut_at_ten_rms_untouched():
    # |z| > 10 has probability 1.5e-23 a draw: the clipped run is the
    # plain one, to the bit.
    directions = np.random.default_rng(0).standard_normal((2000, 6)) + 0.3
    plain, _ = _run(directions, None)
    clipped, _ = _run(directions, 10.0)
    np.testing.assert_array_equal(plain, clipped)


def test_one_outlier_neither_throws_the_parameters_nor_freezes_the_moments():
    # A steady ascent direction of 1 (Adam's step: one learning rate) with
    # one step's outlier of -300, as a score-function estimate gives when a
    # sampled subset's bound falls hundreds of nats below the others.
    directions = np.ones((1500, 1))
    directions[500] = -300.0
    lr = 0.01
    plain, _ = _run(directions, None)
    clipped, _ = _run(directions, 10.0)
    # Unclipped, the first moment turns to -29 and takes ~30 steps to decay:
    # the parameter is thrown back 17 learning rates. Cut to -10, the first
    # moment only just turns negative: under a tenth of a learning rate.
    assert plain[499, 0] - plain[500:, 0].min() > 10 * lr
    assert clipped[499, 0] - clipped[500:, 0].min() < lr
    # The second moment, 91 after the outlier against 1, decays at 0.999 a
    # step: the plain run then crawls at about a tenth of its speed for the
    # next 900 steps; the clipped one (second moment 1.1) goes on at 95%.
    plain_speed = (plain[1499, 0] - plain[600, 0]) / (900 * lr)
    clipped_speed = (clipped[1499, 0] - clipped[600, 0]) / (900 * lr)
    assert plain_speed < 0.2
    assert clipped_speed > 0.9


def test_the_cut_waits_for_the_first_moments_memory():
    # No running scale before 1 / (1 - beta1) = 10 steps: a first direction
    # of any size is taken as it is (Adam's first step is lr * sign).
    state = adam_init(np.zeros(2))
    step = adam_update(state, np.array([1e6, -1.0]), 0.1, clip=1.0)
    np.testing.assert_allclose(step, [0.1, -0.1])


def test_lbfgs_reports_a_budget_run_out_as_not_converged():
    # Rosenbrock's valley takes L-BFGS-B dozens of iterations from (-1.2, 1)
    def fn(x, _):
        a, b = x
        value = -(100.0 * (b - a * a) ** 2 + (1.0 - a) ** 2)
        grad = np.array(
            [400.0 * a * (b - a * a) - 2.0 * (a - 1.0), -200.0 * (b - a * a)]
        )
        return value, grad

    start, box = np.array([-1.2, 1.0]), np.tile([-np.inf, np.inf], (2, 1))
    cut = maximize(fn, start, box, max_iter=5)
    assert cut.n_iter == 5 and not cut.converged
    ample = maximize(fn, start, box, max_iter=20_000)
    assert ample.converged and ample.n_iter < 20_000
    np.testing.assert_allclose(ample.params, [1.0, 1.0], atol=1e-3)
