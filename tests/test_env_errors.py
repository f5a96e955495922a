"""docs/architecture.md §4.5: programmer errors raise ValueError naming the agent; model errors stay in the game."""

import numpy as np
import pytest

import scope_envs


def test_masked_act_names_agent():
    env = scope_envs.make("p4g-cotrain")
    env.reset(seed=0)
    with pytest.raises(ValueError, match="user_0.*not this agent's turn"):
        env.step({"agent_0": 1, "user_0": 3})
    with pytest.raises(ValueError, match="agent_0.*act 0.*illegal"):
        env.step({"agent_0": 0, "user_0": 0})


def test_unknown_agent_and_missing_speaker():
    env = scope_envs.make("p4g-frozen")
    env.reset(seed=0)
    with pytest.raises(ValueError, match="unknown agent 'user_0'"):
        env.step({"agent_0": 1, "user_0": 0})
    with pytest.raises(ValueError, match="agent_0.*no action"):
        env.step({})
    with pytest.raises(ValueError, match="unknown agent"):
        env.observation_space("user_9")


@pytest.mark.parametrize("bad", [None, [1, 0], 1, "agent_0"])
def test_actions_that_are_not_a_dict_are_refused_saying_what_step_takes(bad):
    env = scope_envs.make("p4g-cotrain")
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"actions must be a dict \{agent: action\}"):  # None: a TypeError
        env.step(bad)


@pytest.mark.parametrize("bad", [1.5, "1", None, True, [1], 99, -1])
def test_wrong_type_or_range_on_act_surface(bad):
    env = scope_envs.make("p4g-frozen")
    env.reset(seed=0)
    with pytest.raises(ValueError, match="agent_0"):
        env.step({"agent_0": bad})


def test_numpy_ints_are_accepted():
    env = scope_envs.make("p4g-frozen")
    env.reset(seed=0)
    env.step({"agent_0": np.int64(1)})
    env.step({"agent_0": np.array(2)})


def test_wrong_type_on_text_surface():
    env = scope_envs.make("p4g-frozen", surface="text")
    env.reset(seed=0)
    with pytest.raises(ValueError, match="agent_0.*str"):
        env.step({"agent_0": 3})


def test_bad_regime_options():
    with pytest.raises(ValueError, match="takes no option.*'k'"):
        scope_envs.make("p4g-frozen", k=5)
    with pytest.raises(ValueError, match=r"members must be an int in \[1, 64\]"):
        scope_envs.make("p4g-population", members=0)
    with pytest.raises(ValueError, match="weight_mode"):
        scope_envs.make("p4g-vs", weight_mode="greedy")
    with pytest.raises(ValueError, match="surface"):
        scope_envs.make("p4g-frozen", surface="audio")
    with pytest.raises(ValueError, match="user_reward"):
        scope_envs.make("p4g-cotrain", user_reward="kind")


@pytest.mark.parametrize("env_id", ["p4g-frozen", "cooperbench-vs", "tau2-rotation", "p4g-heldout", "p4g-grounded"])
def test_a_user_reward_where_no_user_learns_is_refused(env_id):
    """user_reward pays a trained user: on a fixed user's regime it had been taken and changed nothing."""
    with pytest.raises(ValueError, match=f"user_reward='adversarial' pays a user that learns: regime '{env_id.split('-')[1]}'"):
        scope_envs.make(env_id, user_reward="adversarial")
    with pytest.raises(ValueError, match="pays a user that learns"):
        scope_envs.make_vec(env_id, 2, user_reward="curriculum")
    scope_envs.make(env_id.split("-")[0] + "-cotrain", user_reward="adversarial")  # where one learns, taken


def test_unknown_id_lists_close_matches():
    with pytest.raises(KeyError, match="p4g-frozen"):
        scope_envs.make("p4g-frozn")


@pytest.mark.parametrize("bad", [None, 3, ["p4g-frozen"], b"p4g-frozen"])
def test_an_id_that_is_not_a_str_is_the_unknown_id_error_saying_what_an_id_is(bad):
    from scope_envs.registry import UnknownEnvironment

    with pytest.raises(UnknownEnvironment, match=r"an environment id is a str such as 'p4g-frozen'.*Known ids"):
        scope_envs.make(bad)
    with pytest.raises(UnknownEnvironment, match=r"an environment id is a str"):
        scope_envs.make_vec(bad, num_envs=2)


def test_step_after_end_is_an_error():
    env = scope_envs.make("p4g-frozen")
    obs, _ = env.reset(seed=0)
    while env.agents:
        obs, *_ = env.step({"agent_0": int(np.flatnonzero(obs["agent_0"]["action_mask"])[-1])})
    with pytest.raises(ValueError, match="reset"):
        env.step({"agent_0": 1})


def test_text_errors_are_in_game_and_truncate_after_limit():
    env = scope_envs.make("p4g-cotrain", surface="text", max_errors=2)
    env.reset(seed=0)
    obs, rew, term, trunc, infos = env.step({"agent_0": "Hello! How are you?", "user_0": ""})
    assert infos["user_0"]["active"] and not any(trunc.values())
    obs, rew, term, trunc, infos = env.step({"agent_0": "", "user_0": "   "})
    assert infos["user_0"]["errors"] == 1 and "[error] empty message" in obs["user_0"]
    obs, rew, term, trunc, infos = env.step({"agent_0": "", "user_0": "[DONATE $lots]"})
    assert all(trunc.values()) and not any(term.values())
    assert env.agents == []
    # nothing lost: the transcript is still there
    assert "Hello! How are you?" in env.unwrapped.game.history[0].text
    assert infos["user_0"]["messages"][1]["content"] == "Hello! How are you?"


def test_final_reply_must_state_an_amount_in_text():
    env = scope_envs.make("p4g-cotrain", surface="text", max_turns=1)
    env.reset(seed=0)
    env.step({"agent_0": "Would you like to donate?", "user_0": ""})
    obs, *_, infos = env.step({"agent_0": "", "user_0": "Nice chatting, bye"})
    assert infos["user_0"]["errors"] == 1 and "[DONATE" in obs["user_0"]
    obs, rew, term, trunc, infos = env.step({"agent_0": "", "user_0": "Fine. [DONATE $0.50]"})
    assert all(term.values()) and rew["agent_0"] == 0.5 and infos["agent_0"]["intended"] == 0.5


def test_step_before_reset_says_so():
    env = scope_envs.make("p4g-frozen")
    with pytest.raises(ValueError, match="before reset"):
        env.step({"agent_0": 1})


@pytest.mark.parametrize("bad", [None, 5, ["hi"], b"hi", np.array(["hi"])])
def test_wrong_type_off_turn_on_text_surface(bad):
    """The agent whose turn it is not still sends a str (ignored); anything else is a programmer's error."""
    env = scope_envs.make("p4g-cotrain", surface="text")
    env.reset(seed=0)
    with pytest.raises(ValueError, match="user_0.*str"):
        env.step({"agent_0": "Hello!", "user_0": bad})


@pytest.mark.parametrize("message, why", [
    ("x" * 4001, "too long: 4001 characters, the limit is 4000"),
    ("I will give\x00\x00 [DONATE $1]", "not printable text"),
    (bytes(range(256)).decode("latin-1"), "not printable text"),
    (bytes(range(256)).decode("utf-8", errors="replace"), "not printable text"),
])
def test_unreadable_text_is_an_in_game_error(message, why):
    env = scope_envs.make("p4g-cotrain", surface="text", max_errors=2)
    env.reset(seed=0)
    env.step({"agent_0": "Hello! How are you?", "user_0": ""})
    obs, rew, term, trunc, infos = env.step({"agent_0": "", "user_0": message})
    assert infos["user_0"]["errors"] == 1 and why in obs["user_0"] and not any(trunc.values())
    obs, rew, term, trunc, infos = env.step({"agent_0": "", "user_0": message})
    assert all(trunc.values()) and env.agents == []
    # the refused message is nowhere: not in the history, not in the chat messages
    assert [t.text for t in env.unwrapped.game.history] == ["Hello! How are you?"]
    assert all(message not in m["content"] for m in infos["user_0"]["messages"])


def test_a_character_cut_mid_encoding_is_still_text():
    """U+FFFD is what a model's output cut inside a multi-byte character decodes to: readable, kept."""
    env = scope_envs.make("p4g-cotrain", surface="text")
    env.reset(seed=0)
    _, _, _, _, infos = env.step({"agent_0": "Would you give to the children? \ufffd", "user_0": ""})
    assert infos["agent_0"]["errors"] == 0


def test_message_cap_is_an_argument_and_the_action_space():
    env = scope_envs.make("p4g-cotrain", surface="text", max_message_chars=20)
    assert env.action_space("agent_0").max_length == 20
    env.reset(seed=0)
    _, _, _, _, infos = env.step({"agent_0": "Hello there, would you like to help?", "user_0": ""})
    assert infos["agent_0"]["errors"] == 1
    with pytest.raises(ValueError, match="max_message_chars"):
        scope_envs.make("p4g-frozen", surface="text", max_message_chars=0)


@pytest.mark.parametrize("bad", [10**5000, -10**5000, "x" * 1_000_000, [1] * 1_000_000], ids=["huge", "-huge", "str", "list"])
def test_huge_bad_actions_get_a_short_error_naming_the_agent(bad):
    env = scope_envs.make("p4g-frozen")
    env.reset(seed=0)
    with pytest.raises(ValueError, match="agent_0") as error:
        env.step({"agent_0": bad})
    assert len(str(error.value)) < 300
    with pytest.raises(ValueError, match="unknown agent") as error:
        env.step({"agent_0": 1, "z" * 1_000_000: 0})
    assert len(str(error.value)) < 300


# -- make's keyword arguments and reset's seeds: refused where they are received, naming the argument ---------
# (docs/environments.md; `scope-envs serve --kwarg` and SCOPE_ENV_KWARGS rely on these errors naming the key)
NAN = float("nan")
BAD_KWARGS = [
    ("p4g-frozen", {"max_turns": "5"}, "max_turns"), ("p4g-frozen", {"max_turns": 2.5}, "max_turns"),
    ("p4g-frozen", {"max_turns": True}, "max_turns"), ("p4g-frozen", {"max_turns": 0}, "max_turns"),
    ("p4g-frozen", {"max_turns": None}, "max_turns"),
    ("cooperbench-frozen", {"max_turns": "5"}, "max_turns"), ("cooperbench-frozen", {"max_turns": 2.5}, "max_turns"),
    ("cooperbench-frozen", {"max_turns": 1}, "max_turns"),
    ("p4g-vs", {"k": "5"}, "k must be"), ("p4g-vs", {"k": 2.0}, "k must be"), ("p4g-vs", {"k": True}, "k must be"),
    ("p4g-vs", {"k": 0}, "k must be"),
    ("p4g-vs", {"tau": "a"}, "tau"), ("p4g-vs", {"tau": NAN}, "tau"), ("p4g-vs", {"tau": -1.0}, "tau"),
    ("p4g-vs", {"tau": float("inf")}, "tau"), ("p4g-vs", {"tau": True}, "tau"), ("tau2-vs", {"tau": "a"}, "tau"),
    ("tau2-vs", {"tau": NAN}, "tau"), ("cooperbench-vs", {"tau": -0.5}, "tau"),
    ("p4g-vs", {"tail": "bogus"}, "tail"), ("p4g-vs", {"tail": NAN}, "tail"), ("p4g-vs", {"tail": 0}, "tail"),
    ("p4g-vs", {"tail": 1.5}, "tail"),
    ("p4g-vs", {"min_survivors": "1"}, "min_survivors"), ("p4g-vs", {"min_survivors": 1.0}, "min_survivors"),
    ("p4g-vs", {"min_survivors": 6}, "min_survivors"),
    ("p4g-vs", {"temperature": "x"}, "temperature"), ("p4g-vs", {"temperature": NAN}, "temperature"),
    ("p4g-vs", {"temperature": 0}, "temperature"),
    ("p4g-frozen", {"surface": "text", "max_errors": "x"}, "max_errors"),
    ("p4g-frozen", {"surface": "text", "max_errors": -1}, "max_errors"),
    ("p4g-frozen", {"max_errors": 1.5}, "max_errors"), ("p4g-frozen", {"max_errors": True}, "max_errors"),
    ("p4g-population", {"members": True}, "members"),
    ("p4g-frozen", {"max_message_chars": 0}, "max_message_chars"),  # the act surface too: a text user is cut to it
    ("cooperbench-vs", {"max_message_chars": -5}, "max_message_chars"),
    ("tau2-frozen", {"max_message_chars": 2.5}, "max_message_chars"),
    # a Text action space whose sample() allocates its max_length (853 GiB asked at 10**12)
    ("p4g-frozen", {"surface": "text", "max_message_chars": 10**12},
     r"max_message_chars must be an int in \[1, 1000000\]"),
]


@pytest.mark.parametrize("env_id, kwargs, name", BAD_KWARGS, ids=[f"{i}-{k}" for i, k, _ in BAD_KWARGS])
def test_bad_make_kwargs_are_a_value_error_naming_the_argument(env_id, kwargs, name):
    with pytest.raises(ValueError, match=name):
        scope_envs.make(env_id, **kwargs)


@pytest.mark.parametrize("regime, name, n", [("rotation", "families", 10**9), ("population", "members", 10**7)])
def test_a_count_of_members_past_its_bound_is_refused_before_any_is_built(regime, name, n):
    """Every member is built in make(): families=10**9 filled memory for minutes, members=10**7 took 21 s."""
    from scope_envs import regimes

    bound = {"families": regimes.MAX_FAMILIES, "members": regimes.MAX_MEMBERS}[name]
    for bad in (bound + 1, n):
        with pytest.raises(ValueError, match=rf"{name} must be an int in \[1, {bound}\]"):
            scope_envs.make(f"p4g-{regime}", **{name: bad})
    scope_envs.make(f"p4g-{regime}", **{name: bound})  # the bound itself is taken


def test_the_bounds_of_the_checked_kwargs_are_accepted():
    scope_envs.make("p4g-frozen", max_turns=1)
    scope_envs.make("p4g-frozen", max_turns=np.int64(4), surface="text", max_errors=0)
    scope_envs.make("cooperbench-frozen", max_turns=2)
    scope_envs.make("p4g-vs", k=np.int64(3), tau=0, tail=1, min_survivors=3, temperature=0.1)
    scope_envs.make("p4g-vs", tau=2.0)  # a floor above every stated probability: the min_survivors most probable


BAD_SEEDS = [({"seed": "1"}, "seed"), ({"seed": 1.5}, "seed"), ({"seed": -1}, "seed"), ({"seed": True}, "seed"),
             ({"seed": [1]}, "seed"), ({"options": {"scenario_seed": "x"}}, r"options\['scenario_seed'\]"),
             ({"options": {"scenario_seed": -1}}, r"options\['scenario_seed'\]"),
             ({"options": {"scenario_seed": 1.5}}, r"options\['scenario_seed'\]"), ({"options": "x"}, "options"),
             # a string would be read as true: "no" restarted the schedule
             ({"options": {"reset_schedule": "no"}}, r"options\['reset_schedule'\]"),
             ({"options": {"reset_schedule": 1}}, r"options\['reset_schedule'\]")]


@pytest.mark.parametrize("env_id", ["p4g-frozen", "p4g-rotation", "p4g-vs", "cooperbench-population"])
@pytest.mark.parametrize("reset, name", BAD_SEEDS, ids=[repr(r) for r, _ in BAD_SEEDS])
def test_bad_seeds_are_a_value_error_naming_the_argument(env_id, reset, name):
    env = scope_envs.make(env_id)
    with pytest.raises(ValueError, match=f"^{name} must be"):
        env.reset(**reset)
    assert not env.unwrapped._started  # refused before anything changed


def test_seeds_still_take_python_and_numpy_ints_and_none():
    env = scope_envs.make("p4g-frozen")
    for seed in (None, 0, np.int64(3), np.uint32(2**32 - 1), 2**70):
        env.reset(seed=seed, options={"scenario_seed": seed})


def _episode(env_id, seed, options=None, **kwargs):
    env = scope_envs.make(env_id, **kwargs)
    obs, infos = env.reset(seed=seed, options=options)
    rng = np.random.default_rng(seed)
    chosen = []
    while env.agents:
        obs, rew, *_, infos = env.step({"agent_0": int(rng.choice(np.flatnonzero(obs["agent_0"]["action_mask"])))})
        chosen.append(infos["agent_0"].get("vs_chosen"))
    game = env.unwrapped.game
    return [(t.role, int(t.act)) for t in game.history], chosen, dict(game.outcome()), rew


def test_checked_valid_kwargs_play_the_same_seeded_episodes_as_before():
    """The checks only refuse: these episodes are the ones the code before them played (same draws, same order)."""
    assert _episode("p4g-vs", 11, {"scenario_seed": 5}, k=4, tau=0.1, selection="prob", max_turns=3) == (
        [("persuader", 3), ("persuadee", 17), ("persuader", 3), ("persuadee", 7), ("persuader", 14),
         ("persuadee", 25)], [2, 0, 0], {"intended": 1.0, "actual": 1.0, "stated": 1.0, "persuader_turns": 3.0},
        {"agent_0": 1.0})
    assert _episode("cooperbench-frozen", np.int64(2), max_turns=4, max_errors=0) == (
        [("teammate", 42), ("partner", 37), ("teammate", 11), ("partner", 2), ("teammate", 9), ("partner", 10),
         ("teammate", 11), ("partner", 38)], [None] * 4,
        {"success": 0.0, "teammate_feature": 0.0, "partner_feature": 1.0, "conflicts": 0.0, "merge_conflict": 0.0,
         "message_share": 0.25}, {"agent_0": 0.0})


def test_the_checks_module_examples_run():
    import doctest

    from scope_envs.core import checks

    assert doctest.testmod(checks).failed == 0


@pytest.mark.parametrize("env_id, kwargs, name", [
    ("p4g-frozen", {"max_turns": 10**9}, "max_turns"),
    ("cooperbench-frozen", {"max_turns": 10**9}, "max_turns"),
    ("tau2-frozen", {"max_steps": 10**9}, "max_steps"),
    ("p4g-vs", {"k": 10**9}, "k"),
])
def test_an_episode_length_or_a_verbalized_list_past_its_edge_is_refused_in_make(env_id, kwargs, name):
    """max_turns=10**9 was taken (an episode no side ends ran for hours), k=10**9 too (each user turn allocated
    k slots in infos: a MemoryError at reset)."""
    from scope_envs.core.checks import MAX_EPISODE_TURNS
    from scope_envs.wrappers.verbalized import MAX_K

    high = MAX_K if name == "k" else MAX_EPISODE_TURNS
    with pytest.raises(ValueError, match=rf"^{name} must be .*{high}"):
        scope_envs.make(env_id, **kwargs)
    scope_envs.make(env_id, **{name: high}).reset(seed=0)  # the edge itself is taken


def test_a_reset_option_the_env_does_not_read_is_ignored_with_a_warning_at_the_callers_line():
    """A typo (``scenario_sed``) had played another episode than the one asked for, silently. It is still ignored,
    as Gymnasium's and PettingZoo's envs ignore keys they do not read (PettingZoo's API test resets with
    ``{"options": 1}``), but a UserWarning names it, at the caller's line; the keys the env reads warn nothing."""
    import warnings

    env = scope_envs.make("p4g-frozen")
    vec = scope_envs.make_vec("p4g-frozen", num_envs=2)
    for reset in (env.reset, vec.reset):
        with pytest.warns(UserWarning, match=r"reads only scenario_seed, reset_schedule; ignoring 'scenario_sed'") \
                as caught:
            reset(seed=0, options={"scenario_sed": 3})
        assert [w.filename for w in caught] == [__file__]
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            reset(seed=0, options={"scenario_seed": 3, "reset_schedule": True})
    with pytest.warns(UserWarning):
        first = env.reset(seed=0, options={"scenario_sed": 3})
    assert first[0]["agent_0"]["observation"].tolist() == env.reset(seed=0)[0]["agent_0"]["observation"].tolist()
