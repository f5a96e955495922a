"""SCOPE's group math, written once: every trainer, engine adapter and the vec engines import it from here.

SCOPE (arXiv 2608.12253) plays *groups* of G episodes that share one scenario (a persona, a task) and
reads the group as a whole: GRPO's advantage compares an episode with the rest of its group, the
curriculum user reward pays the simulator for the spread of the agent's scores in the group, and the
collapse diagnostics count the groups that no longer carry a learning signal. The act-level trainer
(``scope_envs.train.act_ppo``), the LLM trainer (``scope_envs.train.llm``) and the engine adapters
(``scope_envs.integrations``) all compute these quantities with the functions below, so act-level and
LLM-level numbers come from one definition.

* **Seeds** (``derive_seed``, ``scenario_options``): a group's scenario seed is derived from the run's
  seed, the update count and the group's index; every episode of group ``g`` resets with
  ``options={"scenario_seed": derive_seed(scenario_seed, g)}`` and keeps the rest of its randomness.
* **Grouping** (``by_group``): items (episodes, traces) in first-seen order under their group key.
* **Advantages** (``group_advantages``): return minus the group's mean return; under ``std_norm``
  divided by the group's standard deviation plus ``GRPO_EPS``. The standard deviation is the *sample*
  one (``STD_DDOF = 1``, Bessel's correction): verl's ``compute_grpo_outcome_advantage`` divides by
  ``torch.std`` of the group (unbiased, ddof 1) plus ``epsilon=1e-6``, and TRL's ``GRPOTrainer`` by
  ``rewards.view(-1, G).std(dim=1)`` (also ddof 1) plus 1e-4. We follow them, so that a run with
  ``grpo_std_norm`` means what it means in those libraries. (Until issue 26 the LLM trainer used ddof 0:
  its normalized advantages were sqrt((G - 1) / G) of these, 0.935x at G = 8, 0.707x at G = 2.) A group of
  one has no spread: its advantage is 0.
* **Agent score** (``agent_score``, ``has_agent_score``): the finished game's ``agent_score()`` in [0, 1],
  None where the game class does not define one (``Game.agent_score`` is abstract in effect).
* **Curriculum** (``curriculum_setting``, ``curriculum_values``): the user reward
  ``exp(-(var - target_var)^2 / width)`` over a group's agent scores
  (``scope_envs.core.rewards.curriculum_reward``). ``target_var`` and ``width`` are read from the game,
  which checked them when it was built (``curriculum_options``): the one place a trainer learns them.
  Episodes without a score (cut short) are left out; a group with fewer than two scores pays nothing.
* **Collapse diagnostics** (``group_diagnostics``, keys ``DIAGNOSTICS``), over groups of two or more
  episodes of one learner (NaN when there is none):

  * ``zero_std_group_frac``: groups whose returns are all equal (spread at most ``ZERO_SPREAD``): GRPO
    gets no gradient from them;
  * ``all_fail_group_frac``: groups where every episode *failed*: agent score 0, or, for an episode
    without a score (a game without one, an episode cut short), a return <= 0;
  * ``all_success_group_frac``: groups where every episode *succeeded*: agent score >= ``SUCCESS``
    (an episode without a score never counts as a success);
  * ``group_reward_var``: the in-group variance of the returns (ddof 0), averaged over groups.

    >>> group_advantages([1.0, 0.0, 3.0, 3.0], [0, 0, 1, 1]).tolist()
    [0.5, -0.5, 0.0, 0.0]
    >>> d = group_diagnostics(returns=[1.0, 0.0, 2.0, 2.0], scores=[1.0, 0.0, 1.0, 1.0], groups=[0, 0, 1, 1])
    >>> d["zero_std_group_frac"], d["all_success_group_frac"], d["group_reward_var"]
    (0.5, 0.5, 0.125)

``tests/test_groups.py`` holds these definitions; the trainers' tests (``tests/test_act_ppo_grpo.py``,
``tests/test_llm_trainer.py``) hold the trainers to them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any

import numpy as np

from scope_envs.core.game import Game
from scope_envs.core.rewards import curriculum_reward

GRPO_EPS = 1e-6  # std_norm: advantage / (group std + GRPO_EPS), as verl's epsilon
STD_DDOF = 1  # the group's sample standard deviation, as verl and TRL (torch.std)
ZERO_SPREAD = 0.0  # a group's returns are "all equal" when max - min <= this (exact: GRPO's gradient is 0)
SUCCESS = 1.0 - 1e-9  # an agent score at or above this is a success (scores are floats in [0, 1])
GROUP_FRACTIONS = ("zero_std_group_frac", "all_fail_group_frac", "all_success_group_frac")  # fractions of groups
DIAGNOSTICS = (*GROUP_FRACTIONS, "group_reward_var")


# -- seeds ------------------------------------------------------------------------------
@functools.lru_cache(maxsize=4096)  # every episode of a group asks for its group's seed (SeedSequence: ~10 us)
def derive_seed(*keys: int) -> int:
    """A 32-bit seed from integer keys (an iteration's scenario seed from the run's seed and update count,
    a group's from that and its index)."""
    return int(np.random.SeedSequence([k & 0xFFFFFFFFFFFFFFFF for k in keys]).generate_state(1)[0])


def scenario_options(scenario_seed: int | None, episode: int, group_size: int) -> dict:
    """``reset`` options of the ``episode``-th episode of a rollout in groups of ``group_size``: ``{}``
    ungrouped (every episode deals its own scenario), else the scenario seed of its group."""
    if group_size == 1:
        return {}
    return {"scenario_seed": derive_seed(scenario_seed, episode // group_size)}


# -- grouping ---------------------------------------------------------------------------
def by_group(items: Iterable, key: Callable[[Any], Hashable] = lambda item: item["group"]) -> dict[Hashable, list]:
    """``items`` under their group key (default: an episode dict's ``"group"``), groups and members in
    first-seen order."""
    out: dict[Hashable, list] = {}
    for item in items:
        out.setdefault(key(item), []).append(item)
    return out


# -- advantages -------------------------------------------------------------------------
def group_advantages(returns: Sequence[float], groups: Sequence[Hashable], std_norm: bool = False,
                     eps: float = GRPO_EPS) -> np.ndarray:
    """GRPO's advantage of each item: its return minus the mean return of its group; with ``std_norm`` also
    divided by the group's sample std (ddof ``STD_DDOF``) plus ``eps``. A group of one gets 0."""
    returns = np.asarray(returns, np.float64)
    keys = list(groups)
    if len(keys) != len(returns):
        raise ValueError(f"returns and groups must have one entry each per item, got {len(returns)} and {len(keys)}")
    adv = np.zeros_like(returns)
    for idx in by_group(range(len(keys)), key=keys.__getitem__).values():
        r = returns[idx]
        a = r - r.mean()
        if std_norm and len(r) > 1:
            a = a / (r.std(ddof=STD_DDOF) + eps)
        adv[idx] = a
    return adv


# -- the agent's score and the curriculum -------------------------------------------------
def has_agent_score(game) -> bool:
    """Whether ``game``'s class defines ``agent_score()`` (the base ``Game`` leaves it undefined)."""
    method = getattr(type(game), "agent_score", None)
    return method is not None and method is not Game.agent_score


def agent_score(game) -> float | None:
    """The finished game's ``agent_score()`` (agent_0's outcome in [0, 1]); None where the game has none."""
    return float(game.agent_score()) if has_agent_score(game) else None


def curriculum_setting(game) -> tuple[float, float]:
    """``(target_var, width)`` of the curriculum user reward, as the game was built with them (it checks
    them: ``scope_envs.core.rewards.curriculum_options``)."""
    if not has_agent_score(game):
        raise ValueError(f"the curriculum user reward needs the game's agent_score(); "
                         f"{getattr(game, 'name', type(game).__name__)} has none")
    return float(game.target_var), float(game.width)


def curriculum_values(scores: Sequence[float | None], groups: Sequence[Hashable], target_var: float,
                      width: float) -> dict[Hashable, float]:
    """Each group's curriculum user reward from its items' agent scores (None: no score, left out); groups
    with fewer than two scores pay nothing and are absent. Keys in first-seen order."""
    keys = list(groups)
    if len(keys) != len(scores):
        raise ValueError(f"scores and groups must have one entry each per item, got {len(scores)} and {len(keys)}")
    out = {}
    for g, idx in by_group(range(len(keys)), key=keys.__getitem__).items():
        s = [scores[i] for i in idx if scores[i] is not None]
        if len(s) >= 2:
            out[g] = curriculum_reward(s, target_var, width)
    return out


# -- collapse diagnostics ---------------------------------------------------------------
def failed(score: float | None, ret: float) -> bool:
    """An episode failed: agent score 0, or, without a score, a return <= 0."""
    return ret <= 0 if score is None or np.isnan(score) else score == 0


def succeeded(score: float | None) -> bool:
    """An episode succeeded: agent score >= ``SUCCESS`` (never without a score)."""
    return score is not None and not np.isnan(score) and score >= SUCCESS


def group_diagnostics(returns: Sequence[float], scores: Sequence[float | None],
                      groups: Sequence[Hashable]) -> dict[str, float]:
    """SCOPE's early signs of collapse over one learner's groups (``DIAGNOSTICS``; see the module): each a
    mean over the groups of two or more items, NaN when there is none."""
    returns = np.asarray(returns, np.float64)
    keys = list(groups)
    if not len(returns) == len(scores) == len(keys):
        raise ValueError(f"returns, scores and groups must have one entry each per item, got {len(returns)}, "
                         f"{len(scores)} and {len(keys)}")
    rows = {k: [] for k in DIAGNOSTICS}
    for idx in by_group(range(len(keys)), key=keys.__getitem__).values():
        if len(idx) < 2:
            continue
        r = returns[idx]
        rows["zero_std_group_frac"].append(float(np.ptp(r) <= ZERO_SPREAD))
        rows["all_fail_group_frac"].append(float(all(failed(scores[i], returns[i]) for i in idx)))
        rows["all_success_group_frac"].append(float(all(succeeded(scores[i]) for i in idx)))
        rows["group_reward_var"].append(float(r.var()))
    return {k: float(np.mean(v)) if v else float("nan") for k, v in rows.items()}
