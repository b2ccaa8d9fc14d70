"""Sparse GP regression that learns which inducing points to keep.

Uhrenholt, Charvet and Jensen, *Probabilistic selection of inducing points
in sparse Gaussian processes*. A Bernoulli point process ``q_lambda`` over
``K`` candidate inducing inputs is fitted together with the GP, under a
prior ``p(Z)`` proportional to ``exp(-alpha |Z|^2)`` that prefers fewer
points. The objective is

``E_q[L(Z)] - KL(q_lambda || p)``,

with ``L(Z)`` the SVGP bound of the subset ``Z`` and the divergence in
closed form (:class:`~skgp_bayes.targets.selective.BernoulliPointProcess`).

``fit`` runs the seed paper's three phases (its appendix C.2):

1. **Pre-training**: the hyperparameters (kernel and noise) maximise the
   bound with *all* candidates (L-BFGS-B, at most ``n_pre_iter``
   iterations).
2. **Selection**: Adam on the logits of the inclusion probabilities, with
   the score-function gradient of ``E_q[L(Z)]`` from ``n_score_samples``
   draws (with the leave-one-out baseline for the regressor, a
   decaying-average one for the classifier,
   :mod:`skgp_bayes.inference.score_function`) minus the exact gradient of
   the divergence; in the same steps Adam moves the hyperparameters along
   the average gradient of the sampled subsets' bounds, an unbiased
   gradient of ``E_q[L(Z)]``. The phase ends when the objective and
   ``E|Z|`` no longer move by more than their Monte Carlo error between
   windows of 50 steps (:class:`~skgp_bayes.inference.StationarityRule`);
   ``n_select_iter`` only bounds it.
3. **Keep and post-train**: the kept set is the ``round(E|Z|)``
   candidates with the largest ``lambda_k`` (``keep="expected"``, the
   default: the most probable set under ``q_lambda`` among the sets of its
   expected size), the candidates with ``lambda_k > 1/2``
   (``keep="threshold"``, the mode of ``q_lambda``, which keeps almost
   nothing when many candidates are interchangeable and their
   probabilities settle below one half) or one draw from ``q_lambda``
   (``keep="sample"``, the seed paper's choice); at least one point is
   kept. The hyperparameters are then refitted on the kept set (L-BFGS-B,
   at most ``n_post_iter`` iterations). ``doc/selective_svgp.rst`` gives
   the reasoning.

The regressor then draws ``n_hyperparameter_draws`` hyperparameter
vectors from their Laplace approximation at the fitted point (the
curvature of the kept set's bound with the log prior), gives each the kept
set's optimal ``q(u)``, and predicts with the mixture over them
(``_hyperparameter_draws``): a point estimate on a few dozen rows
over-trusts its noise and length scales.

With the Gaussian likelihood the variational ``q(u | Z)`` of every subset
is the optimal one, in closed form (Titsias' collapsed bound, the seed's
"collapsed" case; see :class:`~skgp_bayes.targets.selective.SubsetBound`).
That removes the variational parameters from the optimisation and makes the
hyperparameter gradients exact; each bound evaluation uses all training
points, ``O(n m^2 + m^3)`` for ``m`` kept points. With ``batch_size`` set,
the uncollapsed bound on minibatches is used instead, with one whitened
``q(v*)`` over all candidates shared by the subsets
(:class:`~skgp_bayes.targets.selective.SharedSubsetBound`), as in the
classifier, :class:`SelectiveSVGPClassifier` (Bernoulli likelihood).
"""

from .classifier import SelectiveSVGPClassifier
from .regressor import SelectiveSVGP

__all__ = ["SelectiveSVGP", "SelectiveSVGPClassifier"]
