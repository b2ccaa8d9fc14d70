"""SGLDGPRegressor on small data: one BLAS thread against OpenBLAS's pool.

A 100-iteration default fit on the first 300 rows of scikit-learn's diabetes
data, twice with the library's policy (one BLAS thread while ``n * n`` is at
most ``skgp_bayes._config.SERIAL_BLAS_MAX_WORK``) and twice with the policy
switched off, in one run.

    python benchmarks/bench_sgld_threads.py
"""

import time
import warnings

from sklearn.datasets import load_diabetes

from skgp_bayes import SGLDGPRegressor, _config


def _fit_seconds(X, y):
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 100 iterations do not mix: expected
        est = SGLDGPRegressor(n_iter=100, random_state=0).fit(X, y)
    return time.perf_counter() - start, float(est.predict(X[:1])[0])


def main():
    X, y = load_diabetes(return_X_y=True)
    X, y = X[:300], y[:300]
    serial_limit = _config.SERIAL_BLAS_MAX_WORK
    rows = []
    for label, limit in (("one BLAS thread", serial_limit), ("BLAS pool", 0)):
        _config.SERIAL_BLAS_MAX_WORK = limit
        for _ in range(2):
            rows.append((label, *_fit_seconds(X, y)))
    _config.SERIAL_BLAS_MAX_WORK = serial_limit
    print("| BLAS | fit s | first prediction |\n| --- | ---: | ---: |")
    for label, seconds, first in rows:
        print(f"| {label} | {seconds:.2f} | {first:.10f} |")


if __name__ == "__main__":
    main()
