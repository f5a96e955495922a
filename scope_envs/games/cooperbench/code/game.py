"""The real-task CooperBench game as a state machine over git worktrees (see the package docstring)."""

from __future__ import annotations

import json
import shutil
import tempfile
import weakref
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from scope_envs.core.game import Game, InGameError, Turn
from scope_envs.core.rewards import check_user_reward, curriculum_options
from scope_envs.games.cooperbench import styles
from scope_envs.games.cooperbench.code import dataset
from scope_envs.games.cooperbench.code.merge import Grader, MergeResult, merge_and_grade
from scope_envs.games.cooperbench.code.sandbox import (
    DockerSandbox,
    Limits,
    LocalSandbox,
    unshare_prefix,
)
from scope_envs.games.cooperbench.code.workspace import Escape, Refused, Worktree
from scope_envs.games.cooperbench import batched
from scope_envs.games.cooperbench.batched import PARTNER, TEAMMATE, USER_REWARDS
from scope_envs.games.tau2.text_protocol import call_text, parse

MAX_TURNS = 30
MAX_MESSAGE_CHARS = 32_000  # a whole-file write is one action: room for a file of several hundred lines
TOOL_RESULT_CHARS = 1500  # of each tool result in the transcript (the full result is in infos["messages"])
BACKENDS = ("local", "docker")
# the keyword arguments of the real-task game beyond the act-level game's
GAME_OPTIONS = ("tool_timeout", "cpu_limit", "memory_mb", "backend", "network", "visible_tests", "subset",
                "cache_tests", "pairs")


def _fn(name: str, description: str, params: dict | None = None, required: tuple[str, ...] = ()) -> dict:
    props = {k: {"type": "string", "description": v} for k, v in (params or {}).items()}
    return {"type": "function", "function": {"name": name, "description": description, "parameters": {
        "type": "object", "properties": props, "required": list(required)}}}


TOOLS = {
    "list_files": _fn("list_files", "List the files under a directory of your repository.",
                      {"path": "a directory relative to the repository root (default '.')"}),
    "read_file": _fn("read_file", "Read a file of your repository.", {"path": "relative to the repository root"},
                     ("path",)),
    "write_file": _fn("write_file", "Write a whole file (created or replaced) in your repository.",
                      {"path": "relative to the repository root", "content": "the complete new file text"},
                      ("path", "content")),
    "apply_patch": _fn("apply_patch", "Apply a unified diff (as from git diff) to your repository.",
                       {"patch": "the unified diff, paths relative to the repository root"}, ("patch",)),
    "run_tests": _fn("run_tests", "Run the tests of your feature on your branch; says which pass and fail."),
    "send_message": _fn("send_message", "Send a message to your partner (plain text works too).",
                        {"content": "the message"}, ("content",)),
    "submit": _fn("submit", "Submit your branch; you cannot act afterwards."),
}
ACTS = ("noop", "message", "list_files", "read_file", "write_file", "apply_patch", "run_tests", "submit")
INDEX = {a: i for i, a in enumerate(ACTS)}
FEATURE_INDEX = {TEAMMATE: 0, PARTNER: 1}
INSTRUCTIONS = """You are a software engineer. You and a partner each implement one feature of the same pull \
request, each in your own branch of the same repository; at the end the two branches are merged with git and \
BOTH features' tests must pass on the merged code. If you both change the same lines differently the merge \
conflicts and fails. You cannot see your partner's branch: talk to coordinate (plain text is a message to your \
partner). Act with one JSON tool call per turn, {{"name": "<tool>", "arguments": {{...}}}}; tools: {tools}. \
You have {turns} turns; submit when done.

Your feature:
{feature}"""


@dataclass
class CodeTurn(Turn):
    """A turn: ``text`` is what both may see (a message, or a note naming the tool), ``call`` and ``result`` only
    the caller."""

    call: dict | None = None
    result: str = ""


class CodeGame(Game):
    name = "cooperbench"
    agent_role = TEAMMATE
    user_role = PARTNER
    success_metric = "success"
    success_label = "cooperative success rate"

    def __init__(self, tasks: str | None = None, data_dir=None, *, max_turns: int = MAX_TURNS,
                 user_reward: str = "persona", target_var: float | None = None, width: float | None = None,
                 tool_timeout: float = 60.0, cpu_limit: int = 60, memory_mb: int = 2048, backend: str = "local",
                 network: str = "auto", visible_tests: bool = True, subset: str | None = None,
                 cache_tests: bool = True, pairs=None):
        super().__init__()
        if (tasks is None) == (data_dir is None):
            raise ValueError("give either tasks='demo' (the shipped demo tasks) or data_dir=PATH, not both")
        if tasks is not None and tasks != "demo":
            raise ValueError(f"tasks must be 'demo' (or give data_dir=PATH), got {tasks!r}")
        check_user_reward(user_reward, USER_REWARDS)
        if isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 2:
            raise ValueError(f"max_turns must be an int >= 2, got {max_turns!r}")
        for key, value in (("tool_timeout", tool_timeout), ("cpu_limit", cpu_limit), ("memory_mb", memory_mb)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"{key} must be a positive number, got {value!r}")
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
        self.max_turns, self.user_reward = max_turns, user_reward
        self.target_var, self.width = curriculum_options(user_reward, target_var, width)
        self.visible_tests = bool(visible_tests)
        self.pairs = dataset.discover(dataset.DEMO_DIR if tasks else data_dir, subset)
        if pairs is not None:
            wanted = [pairs] if isinstance(pairs, str) else list(pairs)
            known = {p.id: p for p in self.pairs}
            unknown = [w for w in wanted if w not in known]
            if unknown:
                raise ValueError(f"unknown pair(s) {unknown}; pairs are {sorted(known)}")
            self.pairs = [known[w] for w in wanted]
        self.limits = Limits(wall_s=float(tool_timeout), cpu_s=int(np.ceil(cpu_limit)), memory_mb=int(memory_mb))
        self.backend, self.network, self.cache_tests = backend, network, cache_tests
        if backend == "local":
            LocalSandbox(self.limits, network)  # checks ``network`` now, not at the first test run
        # which guard keeps the network from the tests (reported in infos)
        self.network_guard = "docker" if backend == "docker" else (
            network if network != "auto" else "unshare" if unshare_prefix() else "sitecustomize")
        self._root = Path(tempfile.mkdtemp(prefix="scope-cb-"))
        self._cleanup = weakref.finalize(self, shutil.rmtree, str(self._root), True)
        self._tasks: dict[Path, Grader] = {}
        self._episode = 0
        self.worktrees: dict[str, Worktree] = {}
        self.reset(styles.default_persona(), np.random.default_rng(0))

    # -- setup ---------------------------------------------------------------------------------
    def _grader(self, pair: dataset.Pair) -> Grader:
        if pair.dir not in self._tasks:
            base = self._root / f"base-{len(self._tasks)}"
            dataset.build_base(pair.dir, base)
            if self.backend == "docker":
                repo = pair.repo.replace("_task", "").replace("_", "-")
                sandbox = DockerSandbox(self.limits, f"akhatua/cooperbench-{repo}:task{pair.task_id}")
            else:
                sandbox = LocalSandbox(self.limits, self.network)
            self._tasks[pair.dir] = Grader(sandbox, base, dataset.test_command(pair.dir), self.cache_tests,
                                          str(pair.dir.resolve()))
        return self._tasks[pair.dir]

    def close(self) -> None:
        """Remove every worktree and base repository now (otherwise done when the game is collected)."""
        self._drop_worktrees()
        self._cleanup()

    def _drop_worktrees(self) -> None:
        for wt in self.worktrees.values():
            wt.remove()
        if self.worktrees:
            shutil.rmtree(next(iter(self.worktrees.values())).root.parent, ignore_errors=True)
        self.worktrees = {}

    def acts(self, role):
        return ACTS

    def sample_persona(self, rng, split):
        return styles.sample(rng, split)

    def reset(self, persona, rng):
        self.persona = persona
        self.pair = self.pairs[int(rng.integers(len(self.pairs)))]
        self.grader = self._grader(self.pair)
        self._drop_worktrees()
        self._episode += 1
        folder = self._root / f"episode-{self._episode}"
        folder.mkdir()
        self.worktrees = {r: Worktree(self.grader.base, folder / r, r) for r in (TEAMMATE, PARTNER)}
        self.history: list[CodeTurn] = []
        self.turns = {TEAMMATE: 0, PARTNER: 0}
        self.submitted = {TEAMMATE: False, PARTNER: False}
        self.messages = self.tool_errors = self.escapes_refused = self.tests_run = self.test_timeouts = 0
        self.result: dict[str, float] | None = None
        self.merge: MergeResult | None = None
        self._next = TEAMMATE

    @staticmethod
    def other(role):
        return PARTNER if role == TEAMMATE else TEAMMATE

    def active_role(self):
        return None if self.result is not None else self._next

    def feature(self, role) -> dataset.Feature:
        return self.pair.features[FEATURE_INDEX[role]]

    # -- reading and playing a turn ------------------------------------------------------------
    def understand(self, role, text):
        call = parse(text)  # malformed JSON: an in-game error
        if call is None:
            return INDEX["message"]
        name, args = call["name"], call["arguments"]
        if name not in TOOLS:
            raise InGameError(f"unknown tool {name!r}; tools are {', '.join(TOOLS)}")
        if not isinstance(args, dict):
            raise InGameError(f"{name}: arguments must be a JSON object")
        spec = TOOLS[name]["function"]["parameters"]
        missing = [k for k in spec["required"] if k not in args]
        extra = sorted(set(args) - set(spec["properties"]))
        if missing or extra:
            raise InGameError(f"{name}: " + "; ".join(
                ([f"missing argument(s) {missing}"] if missing else []) + ([f"unknown argument(s) {extra}"] if extra
                                                                           else [])))
        bad = [k for k, v in args.items() if not isinstance(v, str)]
        if bad:
            raise InGameError(f"{name}: argument(s) {bad} must be strings")
        return INDEX["message"] if name == "send_message" else INDEX[name]

    def apply(self, role, act, text: str = ""):
        if role != self.active_role():
            raise ValueError(f"it is not the {role}'s turn")
        if not 0 < act < len(ACTS):
            raise ValueError(f"{role}: act {act} is not playable")
        call = parse(text) if text.lstrip().startswith(("{", "```")) else None
        if ACTS[act] == "message":
            content = call["arguments"]["content"] if call else text
            self.history.append(CodeTurn(role, act, content))
            self.messages += 1
        else:
            call = call or {"name": ACTS[act], "arguments": {}}
            result = self._tool(role, call["name"], call["arguments"])
            self.history.append(CodeTurn(role, act, f"({role} used {call['name']})", call, result))
            if call["name"] == "submit":
                self.submitted[role] = True
        self.turns[role] += 1
        if self.turns[role] >= self.max_turns:
            self.submitted[role] = True
        if all(self.submitted.values()):
            self._finish()
        else:
            other = self.other(role)
            self._next = other if not self.submitted[other] else role

    def _tool(self, role, name, args) -> str:
        wt = self.worktrees[role]
        try:
            if name == "list_files":
                return wt.list_files(args.get("path", "."))
            if name == "read_file":
                return wt.read_file(args["path"])
            if name == "write_file":
                return wt.write_file(args["path"], args["content"])
            if name == "apply_patch":
                return wt.apply_patch(args["patch"])
            if name == "run_tests":
                return self._run_tests(role)
            return "submitted"
        except Refused as e:
            self.tool_errors += 1
            self.escapes_refused += isinstance(e, Escape)
            return f"Error: {e}"

    def _run_tests(self, role) -> str:
        """Its own feature's tests (``visible_tests``) on its branch, as the grader will run them."""
        patch = self.worktrees[role].diff()
        tests = self.feature(role).tests_patch if self.visible_tests else ""
        run = self.grader.test(tests, dataset.drop_test_files(patch) if tests else patch)
        self.tests_run += 1
        self.test_timeouts += run.timed_out
        if run.error:
            self.tool_errors += 1
        return run.summary()

    def _finish(self):
        patches = [self.worktrees[r].diff() for r in (TEAMMATE, PARTNER)]
        f1, f2 = self.pair.features
        self.merge = merge_and_grade(self.grader, *patches, f1.tests_patch, f2.tests_patch)
        self.result = {
            "success": float(self.merge.success),
            "teammate_feature": float(self.merge.feature_passed[0]),
            "partner_feature": float(self.merge.feature_passed[1]),
            "conflicts": float(len(self.merge.conflicting_files)),
            "merge_conflict": float(self.merge.status == "conflicts"),
            "message_share": self.messages / max(1, len(self.history)),
            "tests_run": float(self.tests_run),
            "test_timeouts": float(self.test_timeouts),
            "tool_errors": float(self.tool_errors),
            "escapes_refused": float(self.escapes_refused),
        }

    # -- what each role sees ---------------------------------------------------------------------
    def features(self, role):
        other = self.other(role)
        heard = sum(t.role == other and t.call is None for t in self.history)
        return np.array([self.turns[role] / self.max_turns, self.submitted[role], self.submitted[other],
                         min(heard, 10) / 10, min(self.tests_run, 10) / 10], np.float32)

    def outcome(self):
        base = dict.fromkeys(("success", "teammate_feature", "partner_feature", "conflicts", "merge_conflict",
                              "message_share", "tests_run", "test_timeouts", "tool_errors", "escapes_refused"), 0.0)
        if self.result is None:
            base.update(tests_run=float(self.tests_run), test_timeouts=float(self.test_timeouts),
                        tool_errors=float(self.tool_errors), escapes_refused=float(self.escapes_refused))
        return self.result or base

    def _result_row(self) -> dict[str, np.ndarray]:
        """The finished episode's outcome as the batch's rewards read it: each key a row of one."""
        return {key: np.array([self.result[key]]) for key in batched.OUTCOMES}

    def rewards(self):
        """The act-level game's rewards (``batched.rewards``: team success + own feature; the partner's modes)."""
        if self.result is None:
            return {TEAMMATE: 0.0, PARTNER: 0.0}
        agent, user = batched.rewards(self._result_row(), np.array([self.persona.traits.get("talk", 0.5)]),
                                      self.user_reward)
        return {TEAMMATE: float(agent[0]), PARTNER: float(user[0])}

    def agent_score(self) -> float:
        """The teammate's reward over its maximum, in [0, 1]; 0 before the end."""
        if self.result is None:
            return 0.0
        return float(batched.teammate_score(self._result_row())[0])

    def info(self):
        return {"turns": dict(self.turns), "submitted": dict(self.submitted), "task": self.pair.id}

    def instructions(self, role):
        return INSTRUCTIONS.format(tools=", ".join(TOOLS), turns=self.max_turns,
                                   feature=self.feature(role).description.strip())

    def realize(self, role, act, rng):
        """An act-level player's act in words: a message, or the tool call with no arguments."""
        return "Working on my part." if ACTS[act] == "message" else call_text(ACTS[act], {})

    def chat(self, role) -> list[dict]:
        """The role's chat-format messages: its tool calls and results, both sides' messages."""
        msgs = [{"role": "system", "content": self.instructions(role)}]
        for i, t in enumerate(self.history):
            if t.call is None:
                msgs.append({"role": "assistant" if t.role == role else "user", "content": t.text})
            elif t.role == role:
                cid = f"call_{i}"
                msgs.append({"role": "assistant", "content": None, "tool_calls": [{"id": cid, "type": "function",
                             "function": {"name": t.call["name"], "arguments": json.dumps(t.call["arguments"])}}]})
                msgs.append({"role": "tool", "tool_call_id": cid, "content": t.result})
        return msgs

    def transcript(self, role):
        lines = []
        for t in self.history:
            if t.call is None:
                lines.append(f"{'You' if t.role == role else 'Partner'}: {t.text}")
            elif t.role == role:
                result = t.result if len(t.result) <= TOOL_RESULT_CHARS else t.result[:TOOL_RESULT_CHARS] + " [...]"
                lines += [f"You (tool call): {call_text(t.call['name'], t.call['arguments'])}", f"Tool: {result}"]
        if self.merge is not None:
            lines.append(f"[merged: {self.merge.status}; features passed: {list(self.merge.feature_passed)}]")
        head = f"[your feature]\n{self.feature(role).description.strip()}\n[tools] {', '.join(TOOLS)}\n[log]\n"
        body = "\n".join(lines)
        room = 16384 - len(head) - 1024
        return head + (body if len(body) <= room else body[-room:])

    def text_infos(self, role):
        info = {"messages": self.chat(role), "tools": list(TOOLS.values()), "task_id": self.pair.id,
                "feature_id": self.feature(role).id, "backend": self.backend, "network_guard": self.network_guard}
        if self.merge is not None:
            m = self.merge
            info.update(merge_status=m.status, merge_strategy=m.strategy, apply_status=dict(m.apply_status),
                        conflicting_files=list(m.conflicting_files), feature_passed=list(m.feature_passed),
                        test_outputs=[r.output for r in m.runs])
        return info

    def private(self, role):
        ref = dataset.reference_versions(self.pair)
        return {
            "task": self.pair.id, "turn": self.turns[role], "tools": list(TOOLS.values()),
            "worktree": str(self.worktrees[role].root), "messages": self.chat(role),
            # for scripted players only (their coding skill): the base, own gold and combined file texts
            "reference": {"base": ref["base"], "own": ref[f"feature{FEATURE_INDEX[role] + 1}"],
                          "combined": ref["combined"]},
        }
