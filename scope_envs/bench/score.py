"""``scope-envs score``: one policy scored by the benchmark's protocol and placed in a band, by one command.

**Act surface** (``--surface act``, the default): ``--policy`` is a saved trainer folder (``PPOTrainer.save``),
an SB3 ``.zip`` (sb3-contrib's ``MaskablePPO`` or SB3's ``PPO``) or ``file.py:NAME`` / ``module:NAME`` (a policy,
or a class / function of no arguments returning one). It is evaluated by ``protocol.evaluate_policy`` on seeds
``0..N-1`` (``--seeds``): the train side (``<game>-frozen``), the held-out human proxies and the held-out panel,
with the benchmark's very episodes. The band and the comparison rows come from a reference (``--against``,
default ``reference`` where it is committed): normalized = (x - random) / (oracle - random), recovered =
(x - frozen) / (oracle - frozen), from the reference's rows on the same seeds, where the 95% CI of oracle − frozen
is above 0 (as claims 2a and 2b read it; else not judged, and ``recovered_not`` says why).

**Text surface** (``--surface text``): ``--policy`` is a text policy — a local transformers model folder,
``vllm:DIR`` (where vLLM is installed) or ``openai:BASE_URL#MODEL`` (any OpenAI-compatible endpoint; the
backends of ``scope_envs.agents.llm``) — or any act policy above, which then speaks through the game's realizer.
It plays ``--episodes`` episodes (default 20: text policies are slow) against the held-out human proxies on the
text surface (``<game>-heldout``, ``surface="text"``) and, with ``--panel builtin``, against the six built-in
held-out families seated by ``panel_env`` on the text surface; ``--panel FILE`` (an ``eval-llm`` panel file)
adds ``eval-llm``'s LLM-simulator panel (``scope_envs.train.llm.panel.evaluate``). Episode seeds are the
protocol's (``protocol.side_seeds``). Two rows bound it, played on the very same text episodes:

* ``floor`` — uniform legal play in words: a uniform draw over agent_0's legal acts, rendered by the game's
  realizer (the act level's floor, ``random``, speaking);
* ``ceiling`` — the act level's ceiling in words: PPO trained against the held-out behaviour model on *train*
  personas (the ``oracle`` row's recipe, ``--ceiling-steps`` decisions, default the default
  preset's ceiling budget, ``presets.ceiling_steps``), its acts rendered by the realizer.

Why these: they keep the act level's meaning of the band — no strategy at all, and the best strategy the
package can train from the training-side knowledge of the held-out model — and they speak through the same
channel (the game's realizer, read back by its NLU), so the band measures strategy on the text surface, and an
LLM placed above ``ceiling`` writes better than the best act-level strategy rendered. Both need a game whose
text surface shares the act surface's state (``legal``, ``features``, ``realize``): p4g and cooperbench; elsewhere
(tau2) the rows say why they are absent. ``--ceiling DIR`` plays a saved trainer of the game as the ceiling instead
of training one. ``normalized = (x - floor) / (ceiling - floor)`` on held-out success.

**A learned user** (``--seat user_0``, or another user seat of the game's ``-cotrain`` / ``-population`` ids):
``--policy`` is an SB3 ``.zip`` of a model trained on that seat's ``SingleAgentView`` (``examples/cotrain_sb3.py``
saves one) or a saved trainer folder whose training env had the seat. A user seat has no ground truth: nothing
says how a user *should* play, so a learned user is not scored against the held-out human proxies. It is
*diagnosed*: wrapped as a ``Simulator`` (``policies.load_user``) and passed through ``scope_envs.diagnose``'s
measures, the ones ``scope-envs diagnose`` reports for any simulator (fitted sharpening against the game's
training-side reference model, mode coverage and entropy ratios, cooperation bias; each with a 95% cluster-
bootstrap CI), and a fixed agent (the diagnosis's probe agent) plays ``--episodes`` episodes against it, against
the reference model, the frozen simulator and the held-out human proxies: how much a fixed strategy is paid
in each world (``fixed_agent``), not a grade of the user. Persona sensitivity is not measured: the learned user
reads its card only through the observation the env computes from the dealt card, which the persona probe's
swapped cards do not change. The ``agent_0`` trained against the user is scored by ``bench`` (its row) or by
``score --seat agent_0``.

Writes ``score.json`` and ``score.md`` to ``--out``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

MAX_EPISODES = 100_000
TEXT_EPISODES = 20
TEXT_KEY = 0x747874  # the text rows' generators: [TEXT_KEY, episode seed]


class ScoreError(ValueError):
    """A policy, game or option that cannot be scored (one line, with the argument named)."""

    def __init__(self, argument: str, message: str):
        self.argument = argument
        super().__init__(message)


# ------------------------------------------------------------------------------------------------ act surface
def score_act(spec: str, game: str, seeds: int = 1, against: str | None = "reference", eval_episodes=None,
              heldout_episodes=None, progress: bool = False) -> dict:
    """The act-surface score of ``spec`` (the module docstring): per-seed records and the band's rows;
    ``progress`` shows a bar over the seeds (on stderr)."""
    from tqdm import tqdm

    from scope_envs.bench import policies, reference
    from scope_envs.bench.protocol import EVAL_EPISODES, evaluate_policy, heldout_episodes_for
    from scope_envs.bench.stats import BASELINE, CEILING, FLOOR

    try:
        policy = policies.load(spec)
    except (ValueError, TypeError) as e:
        raise ScoreError("--policy", str(e)) from None
    check_plays_agent(policy, spec, game)
    no_band = None
    if against is None:
        no_band = "no reference (--against): no band"
    else:  # read before any episode: a reference short of seeds is refused at once
        try:
            paths = reference.folders(against)
            path = paths[0]
            found = [r for r in reference.read_records(paths) if r["task"].get("game") == game]
            tasks, ref = [r["task"] for r in found], [r["result"] for r in found]
        except reference.ReferenceMismatch as e:
            if against != "reference":
                raise ScoreError("--against", str(e)) from None
            no_band = f"no band: {e}"  # the default: say why there is no band, do not fail the score
        else:
            if not ref:
                raise ScoreError("--against", f"{path} has no rows of {game}: no band for it")
            reference_seeds = check_reference_seeds(ref, game, seeds, against)
            ref = [r for r in ref if r["seed"] < seeds]
    records = [evaluate_policy(policy, game, s, eval_episodes=eval_episodes, heldout_episodes=heldout_episodes,
                               method="policy")
               for s in tqdm(range(seeds), desc=f"score {game}", unit="seed", disable=not progress)]
    held = [r["metrics"]["heldout_success"] for r in records]
    out = {"surface": "act", "game": game, "policy": spec, "seeds": seeds, "records": records,
           "heldout_success": float(np.mean(held)),
           "panel_success": float(np.mean([r["metrics"]["panel_success"] for r in records])),
           "train_success": float(np.mean([r["metrics"]["train_success"] for r in records])),
           "fingerprint": reference.fingerprint(game), "rows": {}}
    if no_band is not None:
        out["band"] = no_band
        return out
    stale = [r for r in ref if r.get("fingerprint") != out["fingerprint"]]
    # the episodes each side played, here and in the reference (the band reads means: other counts only add noise,
    # but they are said)
    n_train = EVAL_EPISODES if eval_episodes is None else eval_episodes
    mine = {"eval_episodes": n_train,
            "heldout_episodes": heldout_episodes_for(game, n_train) if heldout_episodes is None else heldout_episodes}
    theirs = {k: sorted({t.get(k) for t in tasks}) for k in mine}
    out["episodes"] = {"score": mine, "reference": {k: v[0] if len(v) == 1 else v for k, v in theirs.items()}}
    out["episodes_match"] = all(v == [mine[k]] for k, v in theirs.items())
    for r in ref:
        row = out["rows"].setdefault(r["method"], {"per_seed": {}})
        row["per_seed"][r["seed"]] = {"heldout_success": r["metrics"]["heldout_success"],
                                      "panel_success": r["metrics"].get("panel_success")}
    for row in out["rows"].values():
        row["heldout_success"] = float(np.mean([v["heldout_success"] for v in row["per_seed"].values()]))
        panel = [v["panel_success"] for v in row["per_seed"].values() if v["panel_success"] is not None]
        row["panel_success"] = float(np.mean(panel)) if panel else None
    out["reference"] = str(path)
    out["reference_matches"] = not stale
    out.update(band_position(out["heldout_success"], out["rows"], reference_seeds))
    return out


def band_position(x: float, rows: dict, reference_seeds: int = 0) -> dict:
    """Where held-out success ``x`` stands among the reference's ``rows`` (each with ``heldout_success`` and its
    ``per_seed``): ``normalized`` where the ceiling is above the floor, and ``recovered`` as claims 2a and 2b
    read it (``stats.claims``): only where the 95% CI of oracle − frozen is above 0, else ``recovered_not``
    says why (a gap of a few thousandths made a recovered of -43). ``reference_seeds``: how many seeds the
    reference holds, of which ``rows`` may read fewer (``--seeds``), so that a one-seed band says how to get a CI."""
    from scope_envs.bench.stats import BASELINE, CEILING, FLOOR, gap_to_recover, recoverable

    out = {}
    if not (FLOOR in rows and CEILING in rows and rows[CEILING]["heldout_success"] > rows[FLOOR]["heldout_success"]):
        return out
    lo, hi = rows[FLOOR]["heldout_success"], rows[CEILING]["heldout_success"]
    out["normalized"] = (x - lo) / (hi - lo)
    if BASELINE not in rows:
        return out
    base = rows[BASELINE]["heldout_success"]
    per_seed = {m: [v["heldout_success"] for v in rows[m]["per_seed"].values()] for m in (CEILING, BASELINE)}
    _, ci = gap_to_recover(per_seed[CEILING], per_seed[BASELINE])
    if recoverable(ci):
        out["recovered"] = (x - base) / (hi - base)
    else:
        shown = "" if ci is None or not np.isfinite(ci[0]) else f", 95% CI [{ci[0]:+.3f}, {ci[1]:+.3f}]"
        if ci is None or np.isfinite(ci[0]):
            out["recovered_not"] = f"no gap to recover: the reference's oracle − frozen is {hi - base:+.3f}{shown}"
        elif reference_seeds >= 2:
            out["recovered_not"] = (f"one seed of the reference's oracle and frozen read: no CI of their gap (the "
                                    f"reference has {reference_seeds}; pass --seeds 2 to {reference_seeds})")
        else:
            out["recovered_not"] = "the reference has fewer than 2 seeds of oracle or frozen: no CI of their gap"
    return out


def check_plays_agent(policy, spec: str, game: str, flag: str = "--policy") -> None:
    """``ScoreError`` on ``flag`` when ``policy`` (loaded from ``spec``: a ``policies.load`` result or a
    ``PPOTrainer``) cannot play agent_0 of ``game``: an SB3 model of another seat or game (its shapes), a saved
    trainer of another game or without agent_0. Said before any episode: its network would otherwise meet
    observations of another width (a matmul error, after the other rows had played)."""
    from scope_envs.bench import policies

    problem = policies.agent_problem(policy, spec, game, f"--game {game}")
    if problem:
        raise ScoreError(flag, problem)


def check_reference_seeds(ref: list[dict], game: str, seeds: int, against: str) -> int:
    """The band compares on the same seeds (docs/benchmark-your-algorithm.md): ``ScoreError`` on ``--seeds`` when
    the reference lacks one of seeds ``0..seeds-1`` in any of its rows of ``game`` (none of them: no band, said
    later). Returns how many seeds ``0..`` every row holds."""
    by_row: dict[str, set] = {}
    for r in ref:
        by_row.setdefault(r["method"], set()).add(int(r["seed"]))
    if not by_row:
        return 0
    shared = set.intersection(*by_row.values())
    have = 0
    while have in shared:
        have += 1
    if have < seeds:
        held = f"seeds 0..{have - 1}" if have else "no seed 0"
        raise ScoreError("--seeds", f"the reference has {have} seeds of {game} ({against}: {held} in every row), "
                                    f"--seeds asks for {seeds}: the band compares on the same seeds"
                                    + (f"; pass --seeds {have} or fewer" if have else ""))
    return have


# ------------------------------------------------------------------------------------------------ text surface
class ActInWords:
    """An act-level policy on the text surface: agent_0's act from the game's state (its act observation and
    legal acts, as the act surface has them), rendered by the game's realizer."""

    def __init__(self, policy, name: str):
        self.policy, self.name = policy, name

    def __call__(self, env, agent: str, obs, info, rng) -> str:
        from scope_envs.core.surfaces import act_observation

        base = env.unwrapped
        game, role = base.game, base._agent_role(agent)
        x = act_observation(game, role)[None]
        m = np.asarray(game.legal(role), bool)[None]
        act = int(self.policy.act(x, m).actions[0])
        return game.realize(role, act, rng)


class LLMAgent:
    """A text policy (``scope_envs.train.llm.panel.policy_backend``'s backends) in agent_0's seat."""

    def __init__(self, spec: str, max_new_tokens: int):
        from scope_envs.agents.llm.player import LLMPlayer
        from scope_envs.train.llm import panel
        from scope_envs.train.llm.commands import vllm_missing

        try:
            panel.check_policy(spec)
        except panel.PanelError as e:
            raise ScoreError("--policy", str(e)) from None
        if why := vllm_missing(spec):  # else a traceback from the backend
            raise ScoreError("--policy", why)
        try:
            backend = panel.policy_backend(spec)
        except panel.ModelLoadError as e:  # corrupt weights, an unknown model_type: the user's folder
            raise ScoreError("--policy", str(e)) from None
        self.player, self.name = LLMPlayer(backend, max_new_tokens=max_new_tokens, name="policy"), spec

    def __call__(self, env, agent, obs, info, rng) -> str:
        return self.player(obs, info, rng)


def text_capable(game: str) -> str | None:
    """Why ``game``'s text surface cannot host act policies (the floor and ceiling rows), or None."""
    import scope_envs

    g = scope_envs.make(f"{game}-heldout", surface="text").unwrapped.game
    a = scope_envs.make(f"{game}-heldout").unwrapped.game
    if type(g) is not type(a):
        return (f"{game}'s text surface is another game ({type(g).__name__}, not {type(a).__name__}): act "
                "policies, hence the floor and ceiling rows, do not play it")
    return None


def play_text(env, agent, seed: int) -> dict:
    """One text episode with ``agent`` speaking for agent_0: the game's outcome (its success metric)."""
    rng = np.random.default_rng([TEXT_KEY, seed])
    obs, infos = env.reset(seed=seed)
    while env.agents:
        speaker = next(a for a in env.agents if infos[a].get("active"))
        obs, _, _, _, infos = env.step({speaker: agent(env, speaker, obs[speaker], infos[speaker], rng)})
    game = env.unwrapped.game
    metric = game.success_metric
    outcome = game.outcome()
    return {"success": float(outcome[metric]) if metric else float(game.agent_score() or 0.0),
            "score": float(game.agent_score()) if game.agent_score() is not None else None}


def text_sides(agent, game: str, seed: int, episodes: int, builtin_panel: bool, progress=None) -> dict:
    """``agent`` on the held-out proxies (text) and, with ``builtin_panel``, the six held-out families (text)."""
    import scope_envs
    from scope_envs.agents.families import panel, panel_env
    from scope_envs.bench.protocol import side_seeds

    seeds = side_seeds(seed)
    env = scope_envs.make(f"{game}-heldout", surface="text")
    held = [play_text(env, agent, seeds["heldout"] + i) for i in range(episodes)]
    if progress:
        progress.update(episodes)
    out = {"heldout_success": float(np.mean([h["success"] for h in held])),
           "heldout_per_episode": [h["success"] for h in held]}
    if builtin_panel:
        per = []
        for member, base in zip(panel(game), seeds["panel"]):
            penv = panel_env(env, member)  # the held-out env's game, on its (text) surface
            per.append(float(np.mean([play_text(penv, agent, base + i)["success"] for i in range(episodes)])))
            if progress:
                progress.update(episodes)
        out.update(panel_success=float(np.mean(per)), panel_per_family=per,
                   panel_families=[m.name for m in panel(game)])
    return out


def ceiling_policy(game: str, seed: int, steps: int, saved=None):
    """The act level's ceiling: ``oracle``'s recipe (the held-out behaviour model on train personas), trained
    for ``steps`` decisions, or ``saved`` (a ``PPOTrainer`` already loaded: ``score_text`` loads and checks the
    folder once, before any episode), agent_0's network drawing from its evaluation generator."""
    from scope_envs.bench.methods import method_setup
    from scope_envs.train.act_ppo import PPOConfig, PPOTrainer
    from scope_envs.train.rollout import evaluation_policies

    trainer = saved
    if trainer is None:
        env_id, kwargs, overrides = method_setup(game, "oracle")
        trainer = PPOTrainer(PPOConfig(env_id=env_id, env_kwargs=kwargs, seed=seed, total_steps=steps, **overrides))
        trainer.train()
    return evaluation_policies(trainer, seed)["agent_0"]


def score_text(spec: str, game: str, seed: int = 0, episodes: int = TEXT_EPISODES, panels=("builtin",),
               ceiling_steps: int | None = None, ceiling: str | None = None, max_new_tokens: int = 128,
               out: Path | None = None, progress: bool = True) -> dict:
    """The text-surface score of ``spec`` with the floor and ceiling rows on the same episodes."""
    from tqdm import tqdm

    from scope_envs.bench import policies
    from scope_envs.bench.methods import ceiling_steps as default_ceiling_steps, preset_steps
    from scope_envs.train.policy import UniformPolicy

    builtin_panel = "builtin" in panels
    files = [p for p in panels if p != "builtin"]
    why_not = text_capable(game)
    if spec in ("floor", "ceiling") and why_not:
        raise ScoreError("--policy", why_not)
    saved_ceiling = None
    if ceiling and why_not:  # no ceiling row to play it in: said, not ignored
        raise ScoreError("--ceiling", f"{game}'s text score has no floor or ceiling row ({why_not})")
    if ceiling:
        try:  # a model.pt that cannot be loaded: said before any episode, not a traceback after the floor's
            saved_ceiling = policies.load_trainer(ceiling)
        except ValueError as e:
            raise ScoreError("--ceiling", str(e)) from None
        check_plays_agent(saved_ceiling, ceiling, game, "--ceiling")
    llm_panels = {path: check_llm_panel(path, game) for path in files}  # before any model loads or episode plays
    if spec in ("floor", "ceiling"):
        agent = None
    elif (Path(os.path.expanduser(spec)) / "model.pt").is_file() or \
            spec.endswith(".zip") or (":" in spec and not spec.startswith(("openai:", "vllm:", "hf:"))):
        if why_not:
            raise ScoreError("--policy", why_not)
        try:
            loaded = policies.load(spec)
        except (ValueError, TypeError) as e:
            raise ScoreError("--policy", str(e)) from None
        check_plays_agent(loaded, spec, game)
        act = loaded.players(seed)["agent_0"] if hasattr(loaded, "players") else loaded
        agent = ActInWords(act, spec)
    else:
        agent = LLMAgent(spec, max_new_tokens)
    if files and not isinstance(agent, LLMAgent):
        raise ScoreError("--panel", "a panel file holds LLM simulators: it scores text policies (an LLM), "
                                    "not the floor, the ceiling or act policies")
    rows = {}
    sides = 1 + (6 if builtin_panel else 0)
    n_rows = 1 + (0 if why_not else 2) - (1 if spec in ("floor", "ceiling") else 0)
    bar = tqdm(total=sides * episodes * n_rows, desc="score", unit="episode", disable=not progress)
    try:
        if agent is not None:
            rows[spec] = text_sides(agent, game, seed, episodes, builtin_panel, bar)
        if why_not:
            rows["floor"] = rows["ceiling"] = {"absent": why_not}
        else:
            rows["floor"] = text_sides(ActInWords(UniformPolicy(seed=seed), "floor"), game, seed, episodes,
                                       builtin_panel, bar)
            steps = ceiling_steps or default_ceiling_steps(game, preset_steps(game))
            best = ceiling_policy(game, seed, steps, saved_ceiling)
            rows["ceiling"] = text_sides(ActInWords(best, "ceiling"), game, seed, episodes, builtin_panel, bar)
            rows["ceiling"]["decisions"] = None if ceiling else steps
    finally:
        bar.close()
    result = {"surface": "text", "game": game, "policy": spec, "seed": seed, "episodes": episodes, "rows": rows}
    lo, hi = rows["floor"].get("heldout_success"), rows["ceiling"].get("heldout_success")
    if lo is not None and hi is not None and hi > lo:
        for row in rows.values():
            row["normalized"] = (row["heldout_success"] - lo) / (hi - lo)
    elif lo is not None:
        result["band"] = f"the text ceiling ({hi:.3f}) does not clear the text floor ({lo:.3f}): no band"
    if files:
        from scope_envs.train.llm import panel as llm_panel

        result["llm_panels"] = {}
        for path in files:
            try:
                report = llm_panel.evaluate([spec], f"{game}-frozen", llm_panels[path], episodes, seed=seed,
                                            max_new_tokens=max_new_tokens, out=None if out is None else
                                            out / f"panel-{Path(path).stem}", log=None)
            except llm_panel.PanelError as e:
                raise ScoreError("--panel", str(e)) from None
            result["llm_panels"][path] = report["policies"][spec]["mean"]
    return result


def check_llm_panel(path: str, game: str) -> tuple:
    """An eval-llm panel file, checked as ``eval-llm`` checks it (entries, endpoints, vLLM, the env) before the
    text rows play: else a mistake in it would be said only after all of them. ``ScoreError`` on ``--panel``."""
    from scope_envs.train.llm import panel as llm_panel
    from scope_envs.train.llm.commands import check_panel

    try:
        sims, options = check_panel(path)
        run_id, vs_kwargs = llm_panel.eval_env_id(f"{game}-frozen", options)
        if vs_kwargs:
            from scope_envs.train.llm.commands import UsageError, check_env_kwargs

            try:
                check_env_kwargs(run_id, vs_kwargs, argument="--panel")
            except UsageError as e:
                raise llm_panel.PanelError(str(e).removeprefix("argument --panel: ")) from None
    except llm_panel.PanelError as e:
        raise ScoreError("--panel", str(e)) from None
    return sims, options


# ------------------------------------------------------------------------------------------------ a learned user
USER_MEASURES = ("sharpening: the maximum-likelihood exponent s of pi ∝ ref^s for its answers at fixed probe "
                 "states (1: the game's training-side reference model; above 1: sharper, a collapsed user)",
                 "mode coverage: the share of the reference's reply modes (acts, act paths) it ever produces, and "
                 "its reply and path entropy over the reference's",
                 "cooperation bias: its conceding rate minus the reference's, and its episodes' cooperation "
                 "outcome beside the reference's",
                 "fixed agent: the success of one fixed agent (the diagnosis's probe agent) against it, against "
                 "the reference model, the frozen simulator and the held-out human proxies")
USER_NOT_MEASURED = ("no score against human proxies: a user seat has no ground truth, so a learned user is "
                     "diagnosed, not graded (the fixed agent's success against the proxies is where that agent "
                     "stands there, not the user's score)",
                     "no persona sensitivity: the learned user reads its card only through the observation the env "
                     "computes from the dealt card, which the persona probe's swapped cards do not change",
                     "no real-dialogue numbers (diagnose --data): the real dialogues' states carry no act-surface "
                     "observation for a network to read",
                     "not the agent_0 trained against it: bench scores that row (or score --seat agent_0 on a "
                     "saved trainer)")


def score_user(spec: str, game: str, seat: str, episodes: int | None = None, probe_episodes: int | None = None,
               bootstrap: int | None = None, seed: int = 0, progress: bool = True) -> dict:
    """A learned user's score (the module docstring): ``policies.load_user`` then ``measure_user``."""
    from scope_envs.bench import policies

    try:
        user = policies.load_user(spec, game, seat)
    except policies.SeatError as e:
        raise ScoreError("--seat", str(e)) from None
    except (ValueError, TypeError) as e:
        raise ScoreError("--policy", str(e)) from None
    return {"surface": "act", "seat": seat, "game": game, "policy": spec,
            **measure_user(user, game, episodes, probe_episodes, bootstrap, seed, progress)}


def measure_user(user, game: str, episodes: int | None = None, probe_episodes: int | None = None,
                 bootstrap: int | None = None, seed: int = 0, progress: bool = False) -> dict:
    """The diagnosis of the ``Simulator`` ``user`` (``scope_envs.diagnose.diagnose``, no persona probe: see
    ``USER_NOT_MEASURED``) and a fixed agent's success against it and the comparison users. ``None`` counts take
    ``diagnose``'s defaults."""
    import inspect

    from scope_envs.diagnose.diagnosis import DiagnoseError, diagnose
    from scope_envs.diagnose.report import clean

    defaults = inspect.signature(diagnose).parameters
    episodes = defaults["episodes"].default if episodes is None else episodes
    probe_episodes = defaults["probe_episodes"].default if probe_episodes is None else probe_episodes
    bootstrap = defaults["bootstrap"].default if bootstrap is None else bootstrap
    try:
        diagnosis = diagnose(game, user, probe_episodes=probe_episodes, episodes=episodes, bootstrap=bootstrap,
                             seed=seed, cards=0, persona_states=0, progress=progress)
    except DiagnoseError as e:
        raise ValueError(f"the learned user could not be diagnosed: {e}") from None
    return {"measures": list(USER_MEASURES), "not_measured": list(USER_NOT_MEASURED), "diagnosis": clean(diagnosis),
            "fixed_agent": fixed_agent_success(game, user, episodes, seed)}


def fixed_agent_success(game: str, user, episodes: int, seed: int) -> dict:
    """The game's success metric of the diagnosis's fixed probe agent (``diagnose.probes.ProbeAgent``), mean and
    standard error over ``episodes`` episodes (seeds ``seed..``), against ``user`` and the game's reference
    model and frozen simulator on train cards (``<game>-frozen`` with that user), and against the held-out human
    proxies (``<game>-heldout``)."""
    import scope_envs
    from scope_envs.diagnose import probes, specs
    from scope_envs.games import game_spec

    spec = game_spec(game)
    named = spec.probe_agent.rpartition(":")[2].partition("(")[0]
    sides = {"learned user": ("frozen", user), "reference model": ("frozen", specs.reference(game)),
             "frozen simulator": ("frozen", specs.builtin(game, "frozen")),
             "held-out human proxies": ("heldout", None)}
    out = {"agent": f"the diagnosis's probe agent, {named}"
                    + (f" (a uniform legal act with probability {probes.EXPLORE})" if spec.probe_explores else ""),
           "metric": None, "episodes": episodes, "success": {}}
    for name, (regime, sim) in sides.items():
        env = scope_envs.make(f"{game}-{regime}", **({} if sim is None else {"user": sim}))
        agent = probes.ProbeAgent(game, env, False)
        rng = np.random.default_rng([seed, 4])  # diagnose's own episodes' agent stream: the same episodes
        g = env.unwrapped.game
        out["metric"] = g.success_metric
        values = []
        for ep in range(episodes):
            probes.run_episode(env, agent, seed + ep, rng)
            values.append(float(g.outcome()[g.success_metric]))
        se = float(np.std(values, ddof=1) / np.sqrt(len(values))) if len(values) > 1 else None
        out["success"][name] = {"mean": float(np.mean(values)), "se": se}
    return out


def user_markdown(result: dict) -> str:
    from scope_envs.diagnose.report import rows

    d = result["diagnosis"]
    design = d["design"]
    lines = [f"# scope-envs score: a learned {result['seat']} ({result['policy']}) on {result['game']}", "",
             "A user seat has no ground truth, so a learned user is **diagnosed, not scored against human "
             "proxies**: wrapped as a Simulator and measured as `scope-envs diagnose` measures any simulator "
             f"({d['fit']} fit, {design['probe_states']} probe states from {design['probe_episodes']} probe "
             f"episodes, {design['episodes']} episodes of its own, 95% cluster-bootstrap CIs of "
             f"{design['bootstrap']} replicates; reference: the game's training-side reference model).", "",
             "What this measures:", *(f"- {m}" for m in result["measures"]), "", "What it does not:",
             *(f"- {m}" for m in result["not_measured"]), "",
             "| number | value [95% CI] | reading |", "| --- | --- | --- |",
             *(f"| {a} | {b} | {c} |" for a, b, c in rows(d)), ""]
    fa = result["fixed_agent"]
    lines += [f"Fixed agent: {fa['agent']}; {fa['metric']} over {fa['episodes']} episodes (mean ± s.e.):", "",
              "| against | success |", "| --- | --- |"]
    for name, v in fa["success"].items():
        se = "" if v["se"] is None else f" ± {v['se']:.3f}"
        lines.append(f"| {name} | {v['mean']:.3f}{se} |")
    lines += ["", "One fixed strategy's pay in four worlds: against the learned user beside against the reference "
                  "model is how much this user pays that strategy more (or less) than the training-side model "
                  "does; the held-out row is where the same strategy stands with the proxies, not a grade of the "
                  "user."]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------------ output
def markdown(result: dict) -> str:
    from scope_envs.games import game_spec

    if result.get("seat", "agent_0") != "agent_0":
        return user_markdown(result)

    def f(x):
        return "—" if x is None else f"{x:.3f}"

    lines = [f"# scope-envs score: {result['policy']} on {result['game']} ({result['surface']} surface)", ""]
    if result["surface"] == "act":
        seeds = "Seed 0" if result["seeds"] == 1 else f"Seeds 0..{result['seeds'] - 1}"
        lines += [f"{seeds}, the benchmark's evaluation protocol (scope_envs.bench.protocol). "
                  f"Held-out and panel: {game_spec(result['game']).metric_label}.",
                  "", "| row | held-out | panel |", "|---|---|---|",
                  f"| **{result['policy']}** | {f(result['heldout_success'])} | {f(result['panel_success'])} |",
                  *(f"| {m} (reference) | {f(r['heldout_success'])} | {f(r['panel_success'])} |"
                    for m, r in result["rows"].items()), ""]
        if "normalized" in result:
            lines.append(f"normalized (random → oracle of the reference) {result['normalized']:+.3f}"
                         + (f", recovered (frozen → oracle) {result['recovered']:+.3f}" if "recovered" in result
                            else f"; recovered (frozen → oracle): not judged, {result['recovered_not']}"
                            if "recovered_not" in result else ""))
        else:
            lines.append(result.get("band", "no band: the reference has no random/oracle rows that clear each other"))
        if result.get("episodes_match") is False:
            ours, theirs = result["episodes"]["score"], result["episodes"]["reference"]
            lines.append(f"**Other episode counts than the reference's**: here {ours['eval_episodes']} a side "
                         f"({ours['heldout_episodes']} held-out), the reference {theirs['eval_episodes']} "
                         f"({theirs['heldout_episodes']} held-out); the means compare, with more noise on the "
                         "smaller side (--episodes sets both sides).")
        if result.get("reference_matches") is False:
            lines.append("**The reference was made with other code or data (its fingerprint differs): its rows "
                         "are shown, but they may not be comparable.**")
    else:
        decisions = result["rows"].get("ceiling", {}).get("decisions", 0)
        ceiling = f"the act-level oracle ({decisions:_} decisions)" if decisions else \
            "the saved trainer given by --ceiling" if decisions is None else "the act-level oracle"
        lines += [f"{result['episodes']} episodes per side, seed {result['seed']}; floor = uniform legal acts in the "
                  f"realizer's words, ceiling = {ceiling} in the realizer's words (scope_envs.bench.score). "
                  f"Held-out and panel: {game_spec(result['game']).metric_label}.",
                  "", "| row | held-out (text) | panel (text, 6 families) | normalized |", "|---|---|---|---|"]
        for name, row in result["rows"].items():
            if "absent" in row:
                lines.append(f"| {name} | absent: {row['absent']} | | |")
            else:
                lines.append(f"| {name} | {f(row['heldout_success'])} | {f(row.get('panel_success'))} | "
                             f"{f(row.get('normalized'))} |")
        if result.get("band"):
            lines += ["", result["band"]]
        for path, mean in result.get("llm_panels", {}).items():
            lines += ["", f"LLM panel {path} (scope-envs eval-llm's measures): score {mean['score']:.3f} (the "
                          f"agent's score in [0, 1]), success {mean['success']:.3f} (the share of episodes scoring "
                          "above 0)"]
    return "\n".join(lines) + "\n"


def add_parser(subparsers) -> None:
    """``scope-envs score`` (a subcommand of ``scope_envs.cli``)."""
    from scope_envs.arguments import MAX_DECISIONS, MAX_SEEDS, count, game_name, nonempty, output_dir, saved_trainer

    p = subparsers.add_parser("score", help="score one policy (saved, SB3 .zip, file.py:NAME, or an LLM on the "
                                            "text surface) by the benchmark's protocol, in a band; or diagnose a "
                                            "learned user (--seat user_0)",
                              description="Scores agent_0's policy by the benchmark's protocol, in the reference's "
                                          "band (the default seat), or, with --seat user_0, a learned user: a user "
                                          "seat has no ground truth, so it is not scored against the held-out "
                                          "human proxies but diagnosed as scope-envs diagnose diagnoses any "
                                          "simulator (sharpening, mode coverage, cooperation bias, with 95% CIs), "
                                          "with a fixed agent's success against it beside the same agent's "
                                          "against the reference model, the frozen simulator and the held-out "
                                          "proxies; persona sensitivity is not measured for it.")
    p.add_argument("--policy", required=True, help="a saved trainer folder, an SB3 .zip, file.py:NAME / module:NAME; "
                                                   "on the text surface also a model folder (DIR or hf:DIR), vllm:DIR, "
                                                   "openai:BASE_URL#MODEL, or the rows floor / ceiling")
    from scope_envs.games import game_names

    p.add_argument("--game", type=game_name, required=True, help=f"one of {', '.join(game_names())}")
    p.add_argument("--seat", default="agent_0",
                   help="the seat --policy plays: agent_0 (the default: scored in the band) or a user seat of the "
                        "game's -cotrain / -population ids (user_0, ...: a learned user, diagnosed; --policy is then "
                        "an SB3 .zip trained on that seat's SingleAgentView or a saved trainer with the seat)")
    p.add_argument("--surface", choices=("act", "text"), default="act",
                   help="act (the default): the benchmark's act-level protocol on seeds 0..N-1, in the reference's "
                        "band; text: the policy speaks on the text surface against the held-out proxies (and the "
                        "panel), beside a floor and a ceiling row played on the same episodes")
    p.add_argument("--seeds", type=count(MAX_SEEDS), default=None,
                   help=f"act: seeds 0..N-1 (default 1; recovered needs 2 or more: it is read where the CI of the "
                        f"reference's oracle − frozen on the same seeds is above 0; at most {MAX_SEEDS})")
    p.add_argument("--against", type=nonempty, default=None, help="act: the reference giving the band (reference, "
                                                          "reference-sb3, reference-full or an --out folder; 'none' "
                                                          "for no band)")
    p.add_argument("--episodes", type=count(MAX_EPISODES), default=None,
                   help=f"text: episodes per side (default {TEXT_EPISODES}); act: the evaluation episodes of both "
                        f"sides (default: the protocol's); a user seat: the episodes it plays in its diagnosis and "
                        f"the fixed agent's per side (default: scope-envs diagnose's); at most {MAX_EPISODES:_}")
    p.add_argument("--probe-episodes", type=count(10_000), default=None,
                   help="a user seat: the diagnosis's reference-driven probe episodes (default: scope-envs "
                        "diagnose's; at most 10_000)")
    p.add_argument("--bootstrap", type=count(100_000, low=0), default=None,
                   help="a user seat: bootstrap replicates of the diagnosis's CIs (0: none; default: scope-envs "
                        "diagnose's; at most 100_000)")
    p.add_argument("--panel", action="append", default=None, metavar="builtin|FILE",
                   help="text: 'builtin' (the six held-out families, the default) and/or an eval-llm panel file")
    p.add_argument("--ceiling-steps", type=count(MAX_DECISIONS), default=None,
                   help="text: the ceiling's training decisions (default: the default preset's ceiling budget for the game; "
                        f"at most {MAX_DECISIONS:_})")
    p.add_argument("--ceiling", type=saved_trainer, default=None,
                   help="text: a saved trainer folder (PPOTrainer.save) of --game to use as the ceiling instead of "
                        "training one (not with --ceiling-steps)")
    p.add_argument("--seed", type=count(2**31 - 1, low=0), default=None,
                   help="text, a user seat: the run seed of the episodes (0; 0 to 2**31-1)")
    p.add_argument("--max-new-tokens", type=count(32_768), default=None,
                   help="text: per message (128; at most 32_768)")
    p.add_argument("--out", type=output_dir, default="runs/score",
                   help="score.json and score.md go here (default: ./runs/score)")
    p.set_defaults(func=main, parser=p)


# what a score reads: agent_0 on the act surface ("act"), on the text surface ("text"), or a learned user
# ("user"); the options only some of them read (--episodes and --out serve all three), each None unless given
READ_BY = {"seeds": ("act",), "against": ("act",), "panel": ("text",), "ceiling_steps": ("text",),
           "ceiling": ("text",), "seed": ("text", "user"), "max_new_tokens": ("text",), "probe_episodes": ("user",),
           "bootstrap": ("user",)}
DEFAULTS = {"seeds": 1, "against": "reference", "seed": 0, "max_new_tokens": 128}  # what each is when not given
KIND_NAMES = {"act": "--surface act and --seat agent_0", "text": "--surface text",
              "user": "a user seat (--seat user_0, ...)"}


def main(args: argparse.Namespace) -> None:
    from scope_envs.agents.llm.backends import BackendError
    from scope_envs.files import check_output_dir, describe, write_atomic, write_json

    t0 = time.perf_counter()
    kind = "text" if args.surface == "text" else "act" if args.seat == "agent_0" else "user"
    if args.surface == "text" and args.seat != "agent_0":
        args.parser.error(f"argument --seat: --surface text scores agent_0 only; a learned user ({args.seat}) is "
                          "diagnosed on the act surface (leave out --surface)")
    for dest, readers in READ_BY.items():  # an option this score does not read would be ignored: refused
        if getattr(args, dest) is not None and kind not in readers:
            why = "; it always plays the built-in panel" if dest == "panel" else \
                "; a learned user is diagnosed, not placed in a band" if kind == "user" and dest == "against" else ""
            this = f"--seat {args.seat}" if kind == "user" else f"--surface {args.surface}"
            args.parser.error(f"argument --{dest.replace('_', '-')}: only with "
                              f"{' or '.join(KIND_NAMES[k] for k in readers)} (this is {this}{why})")
    for dest, default in DEFAULTS.items():
        if getattr(args, dest) is None:
            setattr(args, dest, default)
    if args.ceiling is not None and args.ceiling_steps is not None:  # a saved ceiling is not trained: else ignored
        args.parser.error("argument --ceiling-steps: not with --ceiling (the saved trainer is the ceiling as it is; "
                          "--ceiling-steps sets the training of the ceiling made when --ceiling is not given)")
    try:
        out = check_output_dir(args.out)
        if kind == "user":
            result = score_user(args.policy, args.game, args.seat, args.episodes, args.probe_episodes,
                                args.bootstrap, args.seed)
        elif args.surface == "act":
            result = score_act(args.policy, args.game, args.seeds, None if args.against == "none" else args.against,
                               eval_episodes=args.episodes, heldout_episodes=args.episodes, progress=True)
        else:
            result = score_text(args.policy, args.game, args.seed, args.episodes or TEXT_EPISODES,
                                tuple(args.panel or ["builtin"]), args.ceiling_steps, args.ceiling,
                                args.max_new_tokens, out)
    except ScoreError as e:
        args.parser.error(f"argument {e.argument}: {e}")
    except BackendError as e:  # a text policy's model or endpoint that failed mid-run (e.g. a server gone)
        sys.exit(f"scope-envs score: error: {e}")
    except ValueError as e:  # the policy's own complaint (an act it calls illegal, a model of another game)
        sys.exit(f"scope-envs score: {e}")
    result["wall_s"] = time.perf_counter() - t0
    try:
        write_json(out / "score.json", result)
        write_atomic(out / "score.md", markdown(result))
    except OSError as e:  # a full disk, the folder removed while it played: one line, as diagnose says it
        sys.exit(f"scope-envs score: error: cannot write score.json / score.md in {out}: {describe(e)}")
    print(markdown(result))
