"""Verbalized sampling of the game's reference user, batched (``BatchedVecEnv._verbalized``): the scalar
``VerbalizedSampler``'s rules on ``SharpenedReference.verbalize`` (candidates, weights and the draw, given the same
noise and uniform), episodes drawn as the scalar envs draw theirs for every option of the sampler; and the batched
reference is the scalar one bit for bit."""

import numpy as np
import pytest
from scope_envs.wrappers.verbalized import candidate_weights
from test_vec import play
from test_vec_distribution import alike, collect, compare

import scope_envs
from scope_envs.vec import BatchedVecEnv
from scope_envs.vec.batched import verbalized_candidates
from scope_envs.wrappers.verbalized import candidate_weights_rows

OPTIONS = [
    {}, {"k": 10, "tau": 0.05, "min_survivors": 2, "weight_mode": "softmax", "temperature": 0.7},
    {"tail": 0.2, "selection": "prob"}, {"k": 9, "tail": 0.3, "tau": 0.1, "min_survivors": 3},
    {"k": 2, "weight_mode": "uniform", "tau": 0.5},
]


@pytest.mark.parametrize("game,options", [("p4g", o) for o in OPTIONS] + [("cooperbench", o) for o in OPTIONS[:2]])
def test_batched_verbalized_sampling_draws_as_the_scalar_envs(game, options):
    vec = scope_envs.vec.vectorize([scope_envs.make(f"{game}-vs", **options) for _ in range(128)])
    assert isinstance(vec, BatchedVecEnv)
    batched = collect(vec, 8000, 2)  # (the batched side takes the larger sample: its episodes are cheap)
    assert [k[0] for k in vec._kinds] == ["vs_reference"]  # batched, not asked slot by slot
    scalar = collect(scope_envs.vec.vectorize([scope_envs.make(f"{game}-vs", **options) for _ in range(128)],
                                              batched=False), 1200, 2)
    p = compare(batched, scalar)
    assert alike(p), p


@pytest.mark.parametrize("game", ["p4g", "cooperbench"])
def test_the_batched_reference_is_the_scalar_reference_bit_for_bit(game):
    vec = scope_envs.make_vec(f"{game}-vs", num_envs=16)
    obs, _ = vec.reset(seed=1)
    rng = np.random.default_rng(0)
    kind, checked = vec._kinds[0], 0
    for _ in range(40):
        acts = {a: np.argmax(rng.random(obs[a]["action_mask"].shape) * obs[a]["action_mask"], 1)
                for a in vec.possible_agents}
        # the reference after the agent's act, before the user's reply: step the agent's half by hand
        active = vec.batch.active()
        idx = (~vec.idle & (active == 0)).nonzero()[0]
        vec._apply(0, idx, acts["agent_0"][idx])
        active = vec.batch.active()
        todo = (~vec.idle & (active == 1)).nonzero()[0]
        legal = vec.batch.legal(1, active)
        batched = vec.reference(kind, todo, legal[todo])
        for j, i in enumerate(todo.tolist()):
            expected = vec._u[i].simulator.reference(vec.view(i, 1, legal[i]))
            assert np.array_equal(batched[j], expected), (i, batched[j], expected)
            checked += 1
        vec._run_simulators()
        obs = vec._observe()
        if vec.batch.done[~vec.idle].any():  # (stepped by hand: no auto-reset)
            obs, _ = vec.reset(seed=int(rng.integers(100)))
    assert checked > 100


def test_the_candidates_weights_and_draw_follow_the_scalar_rules():
    """Random stated rows (ties, zeros, illegal acts; widths past 8, where numpy's sums turn pairwise):
    the candidates and weights equal the scalar ones, and the inverse-CDF draw is ``Generator.choice``'s."""
    rng = np.random.default_rng(0)
    for width, k, tail, tau, survivors, mode, selection in [
        (12, 10, None, None, 1, "elicited", None), (12, 9, 0.15, 0.05, 3, "softmax", None),
        (6, 5, 0.3, None, 1, "elicited", "prob"), (20, 12, None, 0.02, 4, "uniform", None),
        (5, 5, None, None, 1, "elicited", "random"),
    ]:
        stated = rng.random((400, width)) ** 3
        stated[:, : width // 3] = np.round(stated[:, : width // 3], 1)  # ties and zeros
        stated /= stated.sum(1, keepdims=True)
        legal = rng.random((400, width)) < 0.8
        legal[:, 0] = True
        probs, acts, count = verbalized_candidates(stated, legal, k, tail)
        w = candidate_weights_rows(probs, count, tau, survivors, mode, 2.0, selection)
        u_rng, c_rng = np.random.default_rng(5), np.random.default_rng(5)
        for r in range(len(stated)):
            order = [int(a) for a in np.argsort(-stated[r], kind="stable") if legal[r, a] and stated[r, a] > 0]
            if tail is not None:
                order = [a for a in order if stated[r, a] < tail] or order[-1:]
            order = order[:k]
            assert acts[r, : count[r]].tolist() == order
            if not order:  # nothing stated: the sampler's fallback (the direct answer)
                continue
            p = np.array([float(stated[r, a]) for a in order])
            assert np.array_equal(probs[r, : count[r]], p)
            expected = candidate_weights(p, tau, survivors, mode, 2.0, selection)
            assert np.array_equal(w[r, : count[r]], expected) and not w[r, count[r]:].any()
            cdf = np.cumsum(w[r])
            cdf /= cdf[count[r] - 1]
            assert int((cdf <= u_rng.random()).sum()) == int(c_rng.choice(len(p), p=expected))


def test_the_options_travel_typed_and_are_checked_once():
    from scope_envs.regimes import REGIME_KWARGS
    from scope_envs.vec import BATCHED_KWARGS
    from scope_envs.wrappers.verbalized import VS_OPTIONS, VerbalizedSampler, VSOptions

    env = scope_envs.make("p4g-vs", k=4, tau=0.1, selection="prob")
    options = env.sampler.options
    assert options == VSOptions(k=4, tau=0.1, selection="prob") and env.sampler.k == 4
    vec = scope_envs.vec.vectorize([scope_envs.make("p4g-vs", k=4, tau=0.1, selection="prob") for _ in range(2)])
    vec.reset(seed=0)
    assert vec._kinds[0][-1] == options  # the batched engine reads the same dataclass
    assert REGIME_KWARGS["vs"] == {"user", *VS_OPTIONS} and set(VS_OPTIONS) <= BATCHED_KWARGS
    for bad, match in [({"k": 0}, "k must be"), ({"min_survivors": 3, "k": 2}, "min_survivors"),
                       ({"tail": 2.0}, "tail"), ({"weight_mode": "max"}, "weight_mode"),
                       ({"selection": "prob", "weight_mode": "softmax"}, "not both")]:
        with pytest.raises(ValueError, match=match):
            VSOptions(**bad)
        with pytest.raises(ValueError, match=match):
            VerbalizedSampler(**bad)


def test_what_is_batched_is_declared_and_a_changed_draw_or_model_is_asked_slot_by_slot():
    from scope_envs.agents.p4g import CollapsedPersuadee
    from scope_envs.wrappers.verbalized import VerbalizedSampler

    class OwnDraw(VerbalizedSampler):  # changes the draw: not the batched one
        def __call__(self, sim, view, rng):
            return super().__call__(sim, view, rng)

    class OwnModel(CollapsedPersuadee):  # changes the direct answers: not the batched reference
        def distribution(self, view):
            return super().distribution(view)

    assert VerbalizedSampler.batched and not OwnDraw.batched
    assert CollapsedPersuadee.batched_replies == {"direct", "verbalized"} and OwnModel.batched_replies == {"verbalized"}
    assert OwnModel.batched_reference == "p4g"

    def envs(sampler=None, sim=None):
        out = []
        for _ in range(4):
            env = scope_envs.make("p4g-vs" if sampler else "p4g-frozen", **({"user": sim} if sim else {}))
            if sampler:
                env.unwrapped.user_sampler = sampler
            out.append(env)
        return out

    for make_envs in (lambda: envs(sampler=OwnDraw()), lambda: envs(sim=OwnModel())):
        vec = scope_envs.vec.vectorize(make_envs())
        asked = []
        ask = vec._ask
        vec._ask = lambda i, legal: asked.append(i) or ask(i, legal)
        trace = play(vec, 30, seed=4)
        assert vec._kinds == [] and asked  # nothing batched: asked slot by slot
        assert any(isinstance(t, list) for t in trace)  # and episodes ended
