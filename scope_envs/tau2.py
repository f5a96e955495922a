"""Deprecated: moved to ``scope_envs.games.tau2.replay``; this alias is removed in the next release."""

import sys
import warnings

from scope_envs.games.tau2 import replay as _moved

warnings.warn("scope_envs.tau2 moved to scope_envs.games.tau2.replay", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved
