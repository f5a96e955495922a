"""Deprecated: moved to ``scope_envs.train.llm.trl``; this alias is removed in the next release."""

import sys
import warnings

from scope_envs.train.llm import trl as _moved

warnings.warn("scope_envs.agents.llm.trl_adapter moved to scope_envs.train.llm.trl", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved
