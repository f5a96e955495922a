"""Deprecated: moved to ``scope_envs.train.act_ppo``; this alias is removed in the next release."""

import sys
import warnings

from scope_envs.train import act_ppo as _moved

warnings.warn("scope_envs.agents.ppo moved to scope_envs.train.act_ppo", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved
