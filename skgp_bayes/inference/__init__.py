"""Inference engines over flat parameter vectors; no GP knowledge here."""

from .adam import AdamState, adam_init, adam_update
from .hmc import (
    HMCBlock,
    HMCInfo,
    HMCResult,
    HMCState,
    hmc_init,
    hmc_step,
    run_hmc,
    run_hmc_chains,
)
from .mode_jumps import ModeJumps, laplace_mixture, mode_jump
from .nuts import NUTSInfo, nuts_step
from .optimize import MaximizeResult, maximize
from .score_function import (
    DecayingBaseline,
    StationarityRule,
    bernoulli_score_gradient,
    estimate_bernoulli_gradient,
    leave_one_out_baseline,
)
from .sgld import (
    LangevinMetric,
    SGLDInfo,
    SGLDResult,
    SGLDState,
    mala_step,
    run_sgld,
    sgld_init,
    sgld_schedule,
    sgld_step,
)
from .svgd import (
    SVGDInfo,
    SVGDResult,
    SVGDState,
    median_bandwidth,
    run_svgd,
    svgd_direction,
    svgd_init,
    svgd_step,
)

__all__ = [
    "AdamState",
    "adam_init",
    "adam_update",
    "HMCBlock",
    "HMCInfo",
    "HMCResult",
    "HMCState",
    "hmc_init",
    "hmc_step",
    "run_hmc",
    "run_hmc_chains",
    "NUTSInfo",
    "nuts_step",
    "MaximizeResult",
    "maximize",
    "DecayingBaseline",
    "StationarityRule",
    "bernoulli_score_gradient",
    "estimate_bernoulli_gradient",
    "leave_one_out_baseline",
    "LangevinMetric",
    "SGLDInfo",
    "SGLDResult",
    "SGLDState",
    "mala_step",
    "ModeJumps",
    "laplace_mixture",
    "mode_jump",
    "run_sgld",
    "sgld_init",
    "sgld_schedule",
    "sgld_step",
    "SVGDInfo",
    "SVGDResult",
    "SVGDState",
    "median_bandwidth",
    "run_svgd",
    "svgd_direction",
    "svgd_init",
    "svgd_step",
]
