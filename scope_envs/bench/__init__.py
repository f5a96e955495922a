"""``scope-envs bench``: the simulator-collapse benchmark (games x methods x seeds).

For every method ``agent_0`` (the persuader, the teammate, the service agent) is
trained with the act-level PPO of
``scope_envs.train.act_ppo`` on the method's regime, then evaluated (a) against
the simulator(s) it trained with and (b) against the held-out human-proxy
population (``<game>-heldout``), which no training run and no setting here
ever reads beyond that evaluation (docs/architecture.md §4), and (c) on a panel of six
held-out simulator families (``agents.families.panel``). Two rows bound every
game: ``random`` (uniform legal play, the floor) and ``oracle`` (PPO against
the held-out behaviour model on *train* personas and tasks only, the ceiling:
for measurement, the one place that model is trained against). Each method's
held-out score is also given normalized to that band and as the fraction of
frozen's shortfall it recovers; the confirmatory comparisons (each method
against ``frozen``) and the claims are defined before any result
(``stats.py``) and written to ``claims.json``.

=============  ==============================  ======================================
method         trains on                       evaluated "vs its training simulator" on
=============  ==============================  ======================================
random         nothing (uniform legal acts)    ``<game>-frozen``
oracle         ``<game>-heldout``,             ``<game>-heldout`` on train personas
               ``personas="train"``
untrained      nothing (the initial network)   ``<game>-frozen``
frozen         ``<game>-frozen``               ``<game>-frozen``
vs             ``<game>-vs`` (k=5)             ``<game>-vs``
rotation       ``<game>-rotation``             ``<game>-rotation``
cotrain        ``<game>-cotrain``              ``<game>-cotrain`` with the trained user
population     ``<game>-population``, SCOPE's  ``<game>-population`` with the live trained user
               checkpoint pool (K=5, a
               snapshot every 4 updates)
selfplay       ``<game>-cotrain``, one net     ``<game>-cotrain``, the same net as the user
=============  ==============================  ======================================

``population_members`` (not in the default grid) is a second kind of
population: K = 4 co-trained users, one per episode, with a diversity term.
``--user-reward``, ``--advantage grpo --group-size G`` run the grid SCOPE's way
(``scope_envs.core.rewards``; grouped runs add the collapse diagnostics
``zero_std_group_frac``, ``all_fail_group_frac``, ``all_success_group_frac``
to ``results.json`` and draw ``<game>_collapse.png``).

"Success" is each game's ``success_metric``: for p4g the mean *actual*
donation in dollars (0 to 2), for cooperbench the cooperative success rate
(both features complete, clean merge), next to its conflict rate, message
share and the solo baseline, for tau2 the task success rate (reward 1) with
per-domain figures. Outputs in ``--out``: ``results.json``,
``report.md``, ``curves.json``, ``<game>_learning_curves.png``,
``<game>_entropy.png``.

Your own method is a plug-in of the same protocol as these rows (``scope_envs.bench.plugins``: ``Method``,
``TrainContext``, ``Trained``), every row and any policy is evaluated by ``evaluate_policy``
(``scope_envs.bench.protocol``), and ``--method FILE.py:NAME --against reference`` scores a new method against
the committed reference rows without rerunning them (docs/benchmark-your-algorithm.md).
"""

from scope_envs.bench.methods import (DIAGNOSTICS, EXTRA_METHODS, GAMES, METHODS, METRICS, PRESETS, method_setup,
                                      run_one)
from scope_envs.bench.plugins import Method, TrainContext, Trained
from scope_envs.bench.protocol import evaluate_policy
from scope_envs.bench.runner import add_arguments, main, run
from scope_envs.bench.stats import claims, holm, pairwise_tests, summarize

__all__ = ["DIAGNOSTICS", "EXTRA_METHODS", "GAMES", "METHODS", "METRICS", "PRESETS", "Method", "TrainContext", "Trained",
           "add_arguments", "claims", "evaluate_policy", "holm", "main", "method_setup", "pairwise_tests", "run",
           "run_one", "summarize"]
