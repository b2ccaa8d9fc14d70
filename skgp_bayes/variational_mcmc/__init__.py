"""Variational MCMC for Gaussian processes (Hensman, Filippone, Matthews and
Ghahramani, 2015).

``fit`` runs three stages:

1. **Gaussian approximation.** An SVGP bound
   (:class:`~skgp_bayes.targets.svgp.SVGPBound`) with inducing inputs
   initialised by k-means is maximised jointly in the whitened ``q(v)``, the
   hyperparameters (with their log prior, so a MAP-type estimate) and, when
   the kernel has input gradients, the inducing inputs. L-BFGS-B on the full
   data for small problems; Adam on minibatches for large ones.
2. **HMC** jointly over ``(theta, v)`` on the sparse whitened target
   (:class:`~skgp_bayes.targets.sparse.SparseWhitenedTarget`, the seed
   paper's eq. 7-8) with the inducing inputs fixed at the SVGP's. The
   chains run in curvature-scaled coordinates ``w``, ``(theta, v) = x0 +
   T w`` with ``T' H T = I`` for the negative Hessian ``H`` of the target at
   the SVGP's point ``x0`` (:mod:`skgp_bayes.inference.affine`): HMC with
   the dense mass matrix ``H``. Whitening makes ``v`` a priori standard
   normal, but with informative data its posterior is a narrow, correlated
   ellipse (precision ``I + A W A'``, up to hundreds of times the prior's),
   and it is coupled to the hyperparameters through ``f = A_theta' v``; a
   diagonal mass matrix cannot undo either, the dense curvature undoes both
   to first order (on diabetes, the bulk ESS of the worst parameter per
   gradient rose four-fold). The curvature costs ``2 d`` gradients and is
   used whenever that is at most one chain's warm-up. Every chain starts
   from its own draw of ``N(0, I)`` in ``w``; the step size (dual
   averaging) and a diagonal mass matrix in ``w`` are adapted in warm-up,
   whose first half ends with draws that re-estimate ``T`` (the point
   curvature misjudges skewed length scales; see ``_chains.HMCStage._refine``)
   and give every markedly skewed hyperparameter a sinh map that makes
   its marginal closer to normal
   (:mod:`skgp_bayes.inference.marginal_maps`), held for the rest of the run;
   the number of leapfrog steps is uniform on ``1..ceil(pi / step)``, an
   integration time of up to ``pi`` (see ``max_leapfrog``). Chains
   run on threads by default where their trajectories are compiled, or in
   parallel with joblib; their seeds are spawned up front, so ``n_jobs``
   never changes the result.
3. **Run length.** After warm-up the chains sample in blocks of
   ``n_samples``; after each block the split R-hat and the bulk effective
   sample size of every parameter are computed over all kept draws, and
   sampling stops once R-hat <= 1.01 and the bulk ESS >= 100 everywhere, or
   when ``max_samples`` is spent, with one
   :class:`~skgp_bayes.exceptions.SamplerWarning` giving the worst figures.
   Continuing a chain keeps its adapted step size and mass matrix, so the
   blocks are one chain.

**Gaussian likelihood** (:class:`VariationalMCMCRegressor`'s default).
The target is Gaussian in ``v`` given ``theta``, and integrating ``v`` out
exactly leaves Titsias' collapsed bound plus the log prior
(:mod:`skgp_bayes.targets.collapsed`, with the derivation). Stage 1 then
maximises that bound over the hyperparameters and inducing inputs (the
SVGP bound at its optimal ``q(v)``, in far fewer parameters), stage 2 runs
HMC over ``[theta, log s2]`` alone and completes every kept draw with an
exact draw of ``v | theta``: the same joint distribution (a collapsed,
Rao-Blackwellised sampler), without the funnel between ``theta`` and
``v``, in ``d + 2`` dimensions. The default number of inducing inputs then
follows the data (see ``n_inducing`` in :class:`VariationalMCMCRegressor`).

Hyperparameters outside the kernel's ``bounds`` have zero density for the
sampler (the bounds act as hard walls; a leapfrog step beyond them counts as
a divergent, rejected transition).

``sample_functions`` (and ``sample_y`` with ``method="pathwise"``) builds
pathwise posterior samples (:mod:`skgp_bayes.sampling`): each picks a kept
draw ``(theta, v)``, maps it to inducing values ``u = R_theta v`` and updates
a random-Fourier-feature prior draw by Matheron's rule at the inducing
inputs, so the samples mix over hyperparameters and inducing values.
"""

from .classifier import VariationalMCMCClassifier
from .regressor import VariationalMCMCRegressor

__all__ = ["VariationalMCMCClassifier", "VariationalMCMCRegressor"]
