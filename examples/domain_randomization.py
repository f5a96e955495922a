"""Domain randomization over the training simulators, benchmarked as a plug-in method.

sb3-contrib's MaskablePPO trains ``agent_0`` on ``frozen``, ``vs`` and ``rotation`` at once: one SB3 vec env
whose slots are split among the three simulators (``scope_envs.integrations.sb3.sb3_mixed_vec_env``), so every
rollout mixes the three users. The training code is ``MaskablePPOMethod`` (``scope_envs/bench/sb3_methods.py``:
40 lines, read it), the same trainer as the SB3 reference rows, so this method and ``frozen-sb3`` differ in
their simulators only. Benchmark it against the committed reference rows with one command::

    scope-envs bench --method examples/domain_randomization.py:DomainRandomization --against reference

and against the same trainer on ``frozen`` alone (the method's effect without the trainer's)::

    scope-envs bench --method examples/domain_randomization.py:DomainRandomization --against reference-sb3 \\
        --confirmatory frozen-sb3 frozen

Needs the sb3 extra: ``pip install "scope-envs[sb3]"``. Copy this file and change ``regimes`` or the settings;
the protocol it implements is ``scope_envs.bench.plugins`` (a name, the training simulators, ``train(ctx)``
returning a policy within ``ctx.budget`` decisions of agent_0 and reporting ``ctx.progress``).
"""

from __future__ import annotations

from scope_envs.bench.sb3_methods import MaskablePPOMethod


class DomainRandomization(MaskablePPOMethod):
    name = "domain-randomization"
    regimes = ("frozen", "vs", "rotation")  # 4 of the 12 slots each; the train side is their mean
