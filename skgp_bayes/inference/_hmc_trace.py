"""The per-transition record of one HMC chain, and its result."""

import numpy as np

from ._hmc_state import HMCResult

__all__ = ["ChainTrace"]


class ChainTrace:
    """Per-transition statistics and the kept draws of one chain."""

    def __init__(self, n_warmup, n_samples, thin, d):
        total = n_warmup + n_samples
        self.n_warmup, self.thin, self.total = n_warmup, thin, total
        self.report_every = max(1, total // 10)
        self.accept_prob = np.empty(total)
        self.accepted = np.zeros(total, dtype=bool)
        self.divergent = np.zeros(total, dtype=bool)
        self.n_leapfrog = np.empty(total, dtype=np.int64)
        self.energy = np.empty(total)
        self.step_sizes = np.empty(total)
        self.n_kept = n_samples // thin
        self.samples = np.empty((self.n_kept, d))
        self.log_density = np.empty(self.n_kept)
        self.kept = 0
        self.retried = [0, 0]

    def record(self, it, info, step, state):
        if getattr(info, "retried", False):  # NUTSInfo has no second stage
            self.retried[0] += 1
            self.retried[1] += info.accepted
        self.accept_prob[it], self.accepted[it] = info.accept_prob, info.accepted
        self.divergent[it], self.energy[it] = info.divergent, info.energy
        self.n_leapfrog[it], self.step_sizes[it] = info.n_leapfrog, step
        self._keep(it, state.x, state.logp)

    def record_block(self, it, block):
        """Record an :class:`HMCBlock` of transitions from ``it`` on."""
        rows = slice(it, it + block.positions.shape[0])
        retried = block.retried
        self.retried[0] += int(retried.sum())
        self.retried[1] += int((retried & block.accepted).sum())
        self.accept_prob[rows], self.accepted[rows] = block.accept_prob, block.accepted
        self.divergent[rows], self.energy[rows] = block.divergent, block.energies
        self.n_leapfrog[rows] = block.n_leapfrog
        self.step_sizes[rows] = block.step_sizes
        for i in range(block.positions.shape[0]):
            self._keep(it + i, block.positions[i], block.log_densities[i])

    def _keep(self, it, x, logp):
        """Keep the state after transition ``it`` where thinning says so."""
        j = it - self.n_warmup + 1
        if j > 0 and j % self.thin == 0 and self.kept < self.n_kept:
            self.samples[self.kept], self.log_density[self.kept] = x, logp
            self.kept += 1

    def until_report(self, it):
        """Transitions from ``it`` to the next report (or the end), at least 1."""
        return min(self.report_every - it % self.report_every, self.total - it)

    def report(self, it, step, progress, verbose, print_fn):
        line = verbose and (it + 1) % self.report_every == 0
        if progress is None and not line:
            return
        phase = "warm-up" if it < self.n_warmup else "sampling"
        acceptance = np.mean(self.accept_prob[: it + 1])
        divergences = int(self.divergent[: it + 1].sum())
        if progress is not None:
            stats = {
                "phase": phase,
                "acceptance": float(acceptance),
                "divergences": divergences,
            }
            progress(it + 1, self.total, stats)
        if line:
            print_fn(
                f"HMC {it + 1}/{self.total} ({phase}): step {step:.3g}, mean accept "
                f"{acceptance:.2f}, divergences {divergences}"
            )

    def result(self, state, warmup, elapsed, jumps=(0, 0)):
        sampling = slice(self.n_warmup, self.total)
        return HMCResult(
            samples=self.samples,
            log_density=self.log_density,
            accept_prob=self.accept_prob,
            accepted=self.accepted,
            divergent=self.divergent,
            n_leapfrog=self.n_leapfrog,
            energy=self.energy,
            step_sizes=self.step_sizes,
            step_size=float(warmup.step),
            inv_mass=warmup.inv_mass,
            n_warmup=self.n_warmup,
            acceptance_rate=(
                float(np.mean(self.accept_prob[sampling]))
                if self.total > self.n_warmup
                else np.nan
            ),
            n_divergent=int(self.divergent[sampling].sum()),
            elapsed=elapsed,
            final_state=state.x,
            n_jumps=jumps[0],
            n_jumps_accepted=jumps[1],
            n_retried=self.retried[0],
            n_retried_accepted=self.retried[1],
        )
