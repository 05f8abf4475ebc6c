"""Name heuristics: what a parameter or variable name says about the value it holds.

A name is weak evidence (``probs`` may hold log-probabilities), so the evaluator uses these only
where the code itself says nothing, and marks what it concludes from them (``prob_by_name``).
"""

from __future__ import annotations

import functools
import re

# Parameter and variable names that conventionally hold probabilities.
_PROB_NAME = re.compile(
    r"^(?:p|q|pi|ps|probs?|probabilit(?:y|ies)|preds?|y_?preds?|y_?hat|yhat|p_?hat|"
    r"predictions?|y_?prob|d_?real|d_?fake|real_?prob|fake_?prob|outputs?_?prob|likelihoods?|"
    r"p_?\w+|\w+_probs?|\w+_pred|\w+_prob(?:ability|abilities)?)$",
    re.IGNORECASE,
)
# ...but not these, which merely start with p.
_NOT_PROB_NAME = re.compile(
    r"^(?:params?|pos\w*|pad\w*|path\w*|prev\w*|ph\w*|pt\w*|px\w*|pixel\w*|patch\w*|"
    r"point\w*|penalty\w*|power\w*|proj\w*|pool\w*|pair\w*|part\w*|"
    r"period\w*|phase\w*|pow\w*|perm\w*|peak\w*|pitch\w*)$",
    re.IGNORECASE,
)


_MASK_NAME = re.compile(
    r"^(?:\w*_)?(?:mask|masks|valid|keep|is_\w+|weights_mask|\w*_mask)$", re.IGNORECASE
)


_EPS_NAME = re.compile(r"^(?:\w*_)?(?:eps|epsilon|tiny|eps\d*|smooth\w*)$", re.IGNORECASE)


@functools.lru_cache(maxsize=4096)
def looks_like_epsilon(name: str) -> bool:
    return bool(_EPS_NAME.match(name))


@functools.lru_cache(maxsize=4096)
def looks_like_mask(name: str) -> bool:
    return bool(_MASK_NAME.match(name))


@functools.lru_cache(maxsize=4096)
def looks_like_probability(name: str) -> bool:
    return (
        bool(_PROB_NAME.match(name))
        and not _NOT_PROB_NAME.match(name)
        and not _LOG_WORD.search(name)  # log_probs, sample_log_prob: log space (issue #11)
    )


_LOG_WORD = re.compile(r"(?:^|_)log(?:_|$)", re.IGNORECASE)
