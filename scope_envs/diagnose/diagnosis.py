"""``diagnose``: play the probes, compute every number with its bootstrap CI, return the report (a dict).

The numbers and their definitions are in ``docs/diagnose.md``; the estimators are in ``measures.py`` and
what is played in ``probes.py``.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from scope_envs.core.checks import check_int
from scope_envs.core.simulator import Simulator
from scope_envs.diagnose.limits import LIMITS
from scope_envs.diagnose import measures, probes, specs
from scope_envs.games import game_names, game_spec
from scope_envs.train.rollout import entropy_of_counts

ACT_MODE = 0.01  # an act is a reply mode of the reference when it has at least this share of its pooled mass
PATH_MODE = 0.03  # an act path is a mode when at least this share of the reference's episodes take it
PATH_LEN = 2  # an act path: the user's first PATH_LEN replies (acts coarsened: ``path_act``)
MODE_STREAM = 1_000_000  # the reference's mode-defining episodes use seeds seed + MODE_STREAM + i
# a game's conceding replies (giving, disclosing, agreeing: the cooperation bias) and its episode-level cooperation
# outcome (outcome key, threshold above which it counts, label) are its GameSpec's ``concede`` and
# ``cooperation_outcome``


def with_real_dialogues() -> str:
    """The games with real dialogues (``GameSpec.real_dialogues``), as the errors name them: "p4g has"."""
    games = [g for g in game_names() if game_spec(g).real_dialogues is not None]
    return f"{', '.join(games)} {'has' if len(games) == 1 else 'have'}"


class DiagnoseError(ValueError):
    """A diagnosis that cannot be made (no usable answer, an endpoint that stopped); one line."""


class DataError(DiagnoseError):
    """``data`` is not usable P4G data (truncated or malformed csv files): the command line's ``--data`` error."""


def real_data(data, limit: int | None = None):
    """``(dialogues, response table)`` of the P4G folder ``data`` (``probes.real_dialogues``), read up front and
    under the same check as ``scope-envs validate p4g --data``: ``DataError`` for files that cannot be used."""
    from scope_envs.validate.p4g import data_errors

    try:
        with data_errors(data):
            dialogues, table = probes.real_dialogues(data)
    except (FileNotFoundError, ValueError) as e:
        raise DataError(str(e)) from None
    if limit is not None:
        dialogues = dialogues[:limit]
    if not dialogues:
        raise DataError(f"the P4G csv files in {data} hold no annotated dialogue with an outcome and a survey row; "
                        "are they complete (not truncated) and in the P4G format?")
    return dialogues, table


def _first_line(message) -> str:
    return str(message).strip().splitlines()[0] if str(message).strip() else "no answer"


def path_act(name: str) -> str:
    """An act name coarsened for act paths: p4g's amounts pooled, cooperbench's region dropped."""
    return "provide_amount" if name.startswith("provide_amount") else name.split(":")[0]


def path_of(episode: probes.Episode) -> tuple[str, ...]:
    return tuple(path_act(a) for a in episode.path[:PATH_LEN])


def _ci(stat, clusters, replicates, seed):
    return measures.bootstrap(stat, clusters, replicates, seed)


def _normal_ci(stat, clusters, replicates, seed, within=(0.0, 1.0)):
    """A number that depends on how many distinct clusters enter (mode coverage, an entropy ratio): a normal
    interval around it (``measures.normal_interval``); the percentile bootstrap, whose replicates hold about 63% of
    the distinct clusters, sat off it (coverage at or below the estimate, and could miss it)."""
    return measures.normal_interval(stat, clusters, replicates, seed, within)


def _sharpening_block(reference, answers, clusters, replicates, seed) -> dict:
    keep, logr, counts, off = measures.prepare(reference, answers)
    cl = clusters[keep]
    out = _ci(lambda w: measures.sharpening(logr, counts, w), cl, replicates, seed)
    ones = np.ones(len(cl))
    s = out["value"]
    out.update(states=int((counts.sum(-1) > 0).sum()), off_reference=off,
               at_bound=bool(s is not None and s in (measures.S_MIN, measures.S_MAX)),
               **(measures.divergence(logr, counts, ones, s) if s is not None else {}))
    return out


def _rate(num, den):
    def stat(w):
        d = float(np.sum(w * den))
        return float(np.sum(w * num)) / d if d > 0 else None
    return stat


def diagnose(game: str, simulator: str | Simulator, *, probe_episodes: int = 40, samples: int = 4, cards: int = 6,
             persona_states: int = 40, episodes: int = 400, bootstrap: int = 300, seed: int = 0, data=None,
             real_dialogues: int | None = None, sampled: bool = False, env_kwargs: dict | None = None,
             progress: bool = False, llm_options: dict | None = None) -> dict:
    """Diagnose ``simulator`` (a spec string, see ``specs``, or a ``Simulator``) on ``game``; the report dict.

    ``sampled``: fit from sampled answers even when the simulator states its distribution (the black-box
    route an LLM takes). ``data``: the P4G data folder (p4g only) for the real-people numbers. Raises
    ``ValueError`` for a count or seed outside the command line's range (``limits.LIMITS``),
    ``specs.SpecError`` for a bad spec, ``DataError`` for data files that cannot be used, and ``DiagnoseError``
    when no usable answer came back at any probe state, or in any episode.
    """
    counts = {"probe_episodes": probe_episodes, "samples": samples, "cards": cards, "persona_states": persona_states,
              "episodes": episodes, "bootstrap": bootstrap, "real_dialogues": real_dialogues}
    for name, value in counts.items():  # the command line's ranges
        if value is not None or name != "real_dialogues":
            check_int(name, value, *LIMITS[name])
    check_int("seed", seed, 0, 2**32 - 1)
    if cards == 1:
        raise ValueError("cards: the persona probe needs at least 2 cards, or 0 for none")
    if isinstance(simulator, Simulator):
        sim, kind, spec = simulator, "object", type(simulator).__name__
    else:
        spec = simulator
        sim, kind = specs.resolve(game, spec, **(llm_options or {}))
    if data is not None and game_spec(game).real_dialogues is None:
        raise DiagnoseError(f"--data: only {with_real_dialogues()} real dialogues to diagnose against, not {game!r}")
    real = None if data is None else real_data(data, real_dialogues)  # before anything is played
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=probe_episodes + 3 * episodes, desc=f"diagnose {game} {spec}", unit="episode")
    try:
        report = _diagnose(game, spec, kind, sim, probe_episodes, samples, cards, persona_states, episodes,
                           bootstrap, seed, real, sampled, env_kwargs or {}, bar)
    except probes.FatalSimulatorError as e:
        raise DiagnoseError(f"the simulator stopped answering: {e}") from None
    finally:
        if bar is not None:
            bar.close()
    return report


def _diagnose(game, spec, kind, sim, probe_episodes, samples, cards, persona_states, episodes, bootstrap, seed,
              real, sampled, env_kwargs, bar) -> dict:
    ps = probes.probe_states(game, sim, episodes=probe_episodes, samples=samples, cards=cards,
                             persona_states=persona_states, seed=seed, sampled=sampled, env_kwargs=env_kwargs,
                             progress=bar)
    # nothing usable is a one-line stop, for the probe states and for the episodes each (not numbers of 0)
    if not ps.answered.any():
        raise DiagnoseError(f"the simulator gave no usable answer at any of the {len(ps.answered)} probe states "
                            f"({ps.errors.count} of {ps.asked} questions unusable): "
                            f"{_first_line((ps.errors.messages or ['no answer'])[0])}")
    exact = ps.target is not None
    own = probes.play(game, sim, episodes=episodes, seed=seed, env_kwargs=env_kwargs, progress=bar)
    broken = [e for e in own if e.exception]
    if not any(e.path for e in own):  # no episode got a single reply out of it
        why = broken[0].exception if broken else \
            f"{sum(e.simulator_errors for e in own)} unreadable or illegal replies"
        raise DiagnoseError(f"the simulator gave no usable answer in any of its {len(own)} episodes "
                            f"({len(broken)} raised, {sum(e.truncated for e in own)} truncated): {_first_line(why)}")
    ref_sim = specs.reference(game)
    ref_paired = probes.play(game, ref_sim, episodes=episodes, seed=seed, env_kwargs=env_kwargs, progress=bar)
    ref_modes = probes.play(game, ref_sim, episodes=episodes, seed=seed + MODE_STREAM, env_kwargs=env_kwargs,
                            progress=bar)
    env = probes.make_env(game, ref_sim, sim.plays_text, env_kwargs)
    g = env.unwrapped.game
    names = list(g.acts(g.user_role))
    clusters = ps.episode
    answers = ps.target if exact else ps.draws
    mask = ps.answered
    report = {
        "game": game, "simulator": spec, "name": getattr(sim, "name", type(sim).__name__), "kind": kind,
        "evaluation_only": kind == "builtin" and specs.evaluation_only(spec),
        "surface": "text" if sim.plays_text else "act",
        "fit": "exact" if exact else "sampled",
        "design": {"probe_episodes": probe_episodes, "probe_states": int(len(clusters)), "samples": samples,
                   "cards": cards, "persona_states": int(len(ps.persona_rows)), "episodes": episodes,
                   "bootstrap": bootstrap, "seed": seed, "act_mode": ACT_MODE, "path_mode": PATH_MODE,
                   "path_len": PATH_LEN,
                   "intervals": "95%: percentile cluster bootstrap; mode coverage (acts, acts_mass, paths) and the "
                                "entropy ratios: value ± 1.96 SE within the range, SE the larger of the bootstrap's "
                                "and the leave-one-cluster-out jackknife's",
                   "reference": f"{type(ref_sim).__name__}: the training-side reference model on the dealt train "
                                "card, sharpening 1, no cooperation bias"},
    }
    # -- sharpening against the reference model ------------------------------------------------------
    report["sharpening"] = {"against": "reference model on the dealt card",
                            **_sharpening_block(ps.reference[mask], answers[mask], clusters[mask], bootstrap, seed)}
    card = probes.own_card(sim)
    report["sharpening_own_card"] = None if ps.own_reference is None else {
        "against": f"reference model on the simulator's own card ({card.id})",
        **_sharpening_block(ps.own_reference[mask], answers[mask], clusters[mask], bootstrap, seed)}
    # -- mode coverage and entropy ------------------------------------------------------------------
    pooled_ref = ps.reference.mean(0)
    modes = np.flatnonzero(pooled_ref >= ACT_MODE)
    produced_counts = ps.draws

    def act_coverage(w):  # None (n/a) where the states weighted in hold no usable answer: errors are not 0
        made = (w[:, None] * produced_counts).sum(0) > 0
        return float(made[modes].mean()) if made.any() else None

    def act_mass(w):
        made = (w[:, None] * produced_counts).sum(0) > 0
        return float(pooled_ref[modes][made[modes]].sum() / pooled_ref[modes].sum()) if made.any() else None

    if exact:
        pooled = lambda w: (w[:, None] * ps.target).sum(0)
        pooled_r = lambda w: (w[:, None] * ps.reference).sum(0)
    else:
        pooled = lambda w: (w[:, None] * ps.draws).sum(0)
        pooled_r = lambda w: (w[:, None] * ps.reference_draws).sum(0)

    def entropy_ratio(w):
        h, mine = entropy_of_counts(pooled_r(w)), pooled(w)
        return entropy_of_counts(mine) / h if h > 0 and mine.sum() > 0 else None

    made = produced_counts.sum(0) > 0
    mode_paths = Counter(path_of(e) for e in ref_modes)
    path_modes = sorted(p for p, n in mode_paths.items() if n >= PATH_MODE * len(ref_modes))
    own_paths = [path_of(e) for e in own]
    ref_paths = [path_of(e) for e in ref_paired]
    ep_clusters = np.arange(len(own))
    replied = np.array([len(e.path) > 0 for e in own])  # an episode without a single reply: all errors

    def path_coverage(w):
        seen = {p for p, k in zip(own_paths, w) if k > 0}
        return float(np.mean([p in seen for p in path_modes])) if path_modes and np.any(w * replied) else None

    def path_entropy_ratio(w):
        if not np.any(w * replied):
            return None
        a, b = Counter(), Counter()
        for p, q, k in zip(own_paths, ref_paths, w):
            a[p] += k
            b[q] += k
        h = entropy_of_counts(np.array(list(b.values())))
        return entropy_of_counts(np.array(list(a.values()))) / h if h > 0 else None

    report["coverage"] = {
        "acts": {**_normal_ci(act_coverage, clusters, bootstrap, seed), "modes": [names[i] for i in modes],
                 "missing": [names[i] for i in modes if not made[i]]},
        "acts_mass": _normal_ci(act_mass, clusters, bootstrap, seed),
        "paths": {**_normal_ci(path_coverage, ep_clusters, bootstrap, seed), "modes": ["/".join(p) for p in path_modes],
                  "missing": ["/".join(p) for p in path_modes if p not in set(own_paths)]},
        "entropy_ratio": _normal_ci(entropy_ratio, clusters, bootstrap, seed, (0.0, np.inf)),
        "path_entropy_ratio": _normal_ci(path_entropy_ratio, ep_clusters, bootstrap, seed, (0.0, np.inf)),
    }
    # -- persona sensitivity ------------------------------------------------------------------------
    rng = np.random.default_rng([seed, 11])
    if len(ps.persona_rows):
        # a card whose question failed is dropped (its all-zero row is no answer), from the reference's spread
        # too; a state left with fewer than 2 cards is dropped
        use = ps.persona_answered
        if exact:
            mine = measures.persona_spread(ps.persona_target, True, rng, usable=use)
            theirs = measures.persona_spread(ps.persona_reference, True, rng, usable=use)
        else:
            mine = measures.persona_spread(ps.persona_draws, False, rng, usable=use)
            theirs = measures.persona_spread(ps.persona_reference_draws, False, rng, usable=use)
        keep = use.sum(1) >= 2
        mine, theirs, pc = mine[keep], theirs[keep], clusters[ps.persona_rows][keep]
        mean = lambda x: (lambda w: float(np.average(x, weights=w)) if w.sum() > 0 else None)
        none = {"value": None, "ci": None}
        ci = (lambda x: _ci(mean(x), pc, bootstrap, seed)) if keep.any() else (lambda x: dict(none))
        report["persona_sensitivity"] = {
            **ci(mine), "reference": ci(theirs), "difference": ci(mine - theirs),
            "estimator": "exact TV" if exact else "TV of draws minus the shuffled-card null",
            "states": int(keep.sum()), "dropped_cards": int((~use).sum()), "dropped_states": int((~keep).sum())}
        ref_value = report["persona_sensitivity"]["reference"]["value"]
        value = report["persona_sensitivity"]["value"]
        report["persona_sensitivity"]["ratio"] = value / ref_value if ref_value and value is not None else None
    elif cards and persona_states:  # asked for, yet no state was probed (one probe episode: the probe starts at the
        # second): n/a, not left out as if --cards 0 had been given
        none = {"value": None, "ci": None}
        report["persona_sensitivity"] = {
            **none, "reference": dict(none), "difference": dict(none),
            "estimator": "exact TV" if exact else "TV of draws minus the shuffled-card null", "states": 0,
            "dropped_cards": 0, "dropped_states": 0, "ratio": None,
            "note": "no probe state was asked under cards: the persona probe uses the probe episodes after the first "
                    "(--probe-episodes 2 or more)"}
    else:
        report["persona_sensitivity"] = None
    # -- cooperation ------------------------------------------------------------------------------------
    concede = set(game_spec(game).concede)
    n_own = np.array([len(e.path) for e in own], float)
    c_own = np.array([sum(a in concede for a in e.path) for e in own], float)
    n_ref = np.array([len(e.path) for e in ref_paired], float)
    c_ref = np.array([sum(a in concede for a in e.path) for e in ref_paired], float)
    key, above, label = game_spec(game).cooperation_outcome
    o_own = np.array([e.outcome.get(key, 0.0) > above for e in own], float)
    o_ref = np.array([e.outcome.get(key, 0.0) > above for e in ref_paired], float)
    done_own = np.array([bool(e.outcome) for e in own], float)

    def bias(w):
        a, b = _rate(c_own, n_own)(w), _rate(c_ref, n_ref)(w)
        return None if a is None or b is None else a - b

    def outcome_diff(w):
        a, b = _rate(o_own * done_own, done_own)(w), _rate(o_ref, np.ones(len(w)))(w)
        return None if a is None or b is None else a - b

    # a game that declares no conceding act, or whose episodes never report the outcome's key, measured nothing:
    # n/a, not a rate of 0 (a game outside the package may leave GameSpec.concede and cooperation_outcome unset)
    none = {"value": None, "ci": None}
    ci = (lambda f: _ci(f, ep_clusters, bootstrap, seed)) if concede else (lambda f: dict(none))
    reported = any(key in e.outcome for e in [*own, *ref_paired])
    ci_outcome = (lambda f: _ci(f, ep_clusters, bootstrap, seed)) if reported else (lambda f: dict(none))
    report["cooperation"] = {
        "concede_acts": sorted(concede),
        "rate": ci(_rate(c_own, n_own)),
        "reference_rate": ci(_rate(c_ref, n_ref)),
        "bias": ci(bias),
        "outcome": {"label": label, "rate": ci_outcome(_rate(o_own * done_own, done_own)),
                    "reference_rate": ci_outcome(_rate(o_ref, np.ones(len(o_ref)))),
                    "difference": ci_outcome(outcome_diff)},
    }
    if not concede:
        report["cooperation"]["note"] = "the game declares no conceding act (GameSpec.concede)"
    if not reported:
        report["cooperation"]["outcome"]["note"] = (f"no episode's outcome has the key {key!r} "
                                                    "(GameSpec.cooperation_outcome)")
    # -- errors -------------------------------------------------------------------------------------------
    report["errors"] = {
        "asked": ps.asked, "probe_errors": ps.errors.count, "messages": ps.errors.messages,
        "episode_in_game_errors": int(sum(e.simulator_errors for e in own)),
        "episodes_truncated": int(sum(e.truncated for e in own)),
        "episodes_raised": len(broken), "episode_messages": sorted({e.exception for e in broken})[:5]}
    if real is not None:
        report["real"] = _real(sim, real, samples, seed, sampled, bootstrap, own, o_own, done_own)
    return report


def _real(sim, real, samples, seed, sampled, bootstrap, own, o_own, done_own) -> dict:
    """p4g with the real data (``real_data``): the sharpening fitted against the real replies given the
    persuader's act, the log-likelihood of the real replies given the real histories, conceding and giving
    against real people."""
    from scope_envs.games.p4g.fit import RESPONSE_ACTS

    dialogues, table = real
    rs = probes.real_states(sim, dialogues, samples=samples, seed=seed, sampled=sampled)
    if not len(rs.dialogue):
        raise DataError(f"none of the {len(dialogues)} real dialogues could be replayed (each ended at its first "
                        "reply); are the P4G csv files complete and in the P4G format?")
    exact = rs.target is not None
    answers = rs.target if exact else rs.draws
    mask = rs.answered
    real_ref = np.where(rs.legal, table[rs.last_act], 0.0)
    real_ref = real_ref / real_ref.sum(-1, keepdims=True)
    out = {"dialogues": len(dialogues), "states": int(len(rs.dialogue)), "replays_stopped": rs.stopped,
           "errors": rs.errors.count,
           "sharpening": {"against": "real persuadees' replies given the persuader's act (add-0.5 smoothed)",
                          **_sharpening_block(real_ref[mask], answers[mask], rs.dialogue[mask], bootstrap, seed)}}
    idx = np.arange(len(rs.real_reply))
    if exact:
        p_sim = rs.target[idx, rs.real_reply]
    else:
        legal_n = rs.legal.sum(-1)
        p_sim = (rs.draws[idx, rs.real_reply] + 0.5) / (rs.draws.sum(-1) + 0.5 * legal_n)
    ll_sim = np.log(np.maximum(p_sim, 1e-12))
    ll_ref = np.log(np.maximum(rs.reference[idx, rs.real_reply], 1e-12))
    ll_table = np.log(np.maximum(real_ref[idx, rs.real_reply], 1e-12))
    mean = lambda x, m: (lambda w: float(np.average(x[m], weights=w[m])) if w[m].sum() > 0 else None)
    ll = _ci(mean(ll_sim, mask), rs.dialogue, bootstrap, seed)
    out["log_likelihood"] = {
        **ll, "perplexity": float(np.exp(-ll["value"])) if ll["value"] is not None else None,
        "zero_probability_replies": int((p_sim[mask] <= 0).sum()),
        "estimator": "exact" if exact else "sampled: (draws + 0.5) / (n + 0.5 legal replies)",
        "reference_model": _ci(mean(ll_ref, np.ones(len(mask), bool)), rs.dialogue, bootstrap, seed),
        "real_table_in_sample": _ci(mean(ll_table, np.ones(len(mask), bool)), rs.dialogue, bootstrap, seed)}
    concede = [RESPONSE_ACTS.index(a) for a in game_spec("p4g").concede]  # the real data are P4G's
    if exact:
        c_sim = rs.target[:, concede].sum(-1)
    else:
        c_sim = rs.draws[:, concede].sum(-1) / np.maximum(rs.draws.sum(-1), 1)
    c_real = np.isin(rs.real_reply, concede).astype(float)
    out["cooperation"] = {
        "rate": _ci(mean(c_sim, mask), rs.dialogue, bootstrap, seed),
        "real_rate": _ci(mean(c_real, mask), rs.dialogue, bootstrap, seed),
        "bias": _ci(mean(c_sim - c_real, mask), rs.dialogue, bootstrap, seed),
        "note": "at the real histories: the simulator's conceding share against the real persuadees' replies"}
    gave = np.array([d.donation > 0 for d in dialogues], float)
    out["give_rate"] = {"simulator_episodes": _ci(_rate(o_own * done_own, done_own), np.arange(len(own)),
                                                  bootstrap, seed),
                        "real_people": _ci(lambda w: float(np.average(gave, weights=w)), np.arange(len(gave)),
                                           bootstrap, seed),
                        "note": "the simulator against the probe persuader (the real persuaders' strategy mix); "
                                "the real people against their own persuaders"}
    return out
