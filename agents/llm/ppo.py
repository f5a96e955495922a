"""Deprecated: moved to ``scope_envs.train.llm.ppo``; this alias is removed in the next release."""

import sys
import warnings

from scope_envs.train.llm import ppo as _moved

warnings.warn("scope_envs.agents.llm.ppo moved to scope_envs.train.llm.ppo", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved
