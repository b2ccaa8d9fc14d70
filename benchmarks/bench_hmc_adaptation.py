"""How well HMC's warm-up adapts a diagonal mass matrix to a badly scaled target.

The target is a 5-D Gaussian with standard deviations 0.01, 0.1, 1, 10 and
100 (two of them correlated at 0.5), the one of
``tests/inference/test_hmc.py``. For each seed one chain runs 400 warm-up
and 600 sampling iterations of at most 15 leapfrog steps from the same
start; the adapted inverse mass is compared with the variances, and the
chain's sampling phase with the true moments.

    python benchmarks/bench_hmc_adaptation.py [--seeds 40]

Run it against another checkout with ``PYTHONPATH=that/checkout`` to compare
adaptation rules (``run_hmc``'s signature has not changed). Prints Markdown.
"""

import argparse
import time

import numpy as np

from skgp_bayes.diagnostics import effective_sample_size
from skgp_bayes.inference import run_hmc

SCALES = np.array([0.01, 0.1, 1.0, 10.0, 100.0])
MEAN = np.array([1.0, -2.0, 0.5, 3.0, -50.0])


def _target():
    cov = np.diag(SCALES**2)
    cov[1, 2] = cov[2, 1] = 0.5 * SCALES[1] * SCALES[2]
    prec = np.linalg.inv(cov)

    def logp_and_grad(x):
        r = x - MEAN
        g = -prec @ r
        return 0.5 * r @ g, g

    return logp_and_grad


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=40)
    args = parser.parse_args()
    logp = _target()
    ratios, ess, sd_ratio = [], [], []
    start = time.perf_counter()
    for seed in range(args.seeds):
        res = run_hmc(
            logp,
            MEAN + SCALES,
            n_warmup=400,
            n_samples=600,
            max_leapfrog=15,
            random_state=seed,
        )
        ratios.append(res.inv_mass / SCALES**2)
        ess.append(effective_sample_size(res.samples[None]))
        sd_ratio.append(res.samples.std(0) / SCALES)
    elapsed = time.perf_counter() - start
    ratios, ess, sd_ratio = map(np.array, (ratios, ess, sd_ratio))
    off = np.any((ratios < 1 / 20) | (ratios > 20), axis=1)
    print(f"{args.seeds} chains, {elapsed:.1f} s\n")
    print("| quantity | sd 0.01 | sd 0.1 | sd 1 | sd 10 | sd 100 |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for q in (0.0, 0.5, 1.0):
        row = " | ".join(f"{v:.3g}" for v in np.quantile(ratios, q, axis=0))
        print(f"| inverse mass / variance, quantile {q:g} | {row} |")
    row = " | ".join(f"{v:.0f}" for v in np.median(ess, axis=0))
    print(f"| ESS of 600 draws, median | {row} |")
    row = " | ".join(f"{v:.2f}" for v in np.median(sd_ratio, axis=0))
    print(f"| sample sd / true sd, median | {row} |")
    print(f"\nChains with an inverse mass over 20x off: {off.sum()} of {off.size}")


if __name__ == "__main__":
    main()
