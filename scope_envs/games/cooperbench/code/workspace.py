"""A teammate's worktree and the file tools that act on it, confined to it.

Each teammate works in its own ``git worktree`` of the task's base commit. A
path an agent names is refused (an ``Error: ...`` tool result, never a write)
when it is absolute, has a ``..`` part, points into ``.git``, or resolves
(symlinks followed) outside the worktree; a patch is refused when any path it
names is refused or when it would create a symlink, and ``git apply`` itself
refuses to write through a symlink. The branch's patch is the worktree's
diff against the base, new files included (``git add -A``; ``git diff
--cached``), the way CooperBench takes an agent's patch.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

from scope_envs.games.cooperbench.code.dataset import git

MAX_READ = 20_000  # characters of a file shown by read_file
MAX_LIST = 500  # entries shown by list_files
GIT_METADATA = (".gitattributes", ".gitmodules")  # e.g. "* merge=union" would make any conflict merge "cleanly"


class Refused(Exception):
    """A tool call the worktree will not carry out; its message is the tool's error result."""


class Escape(Refused):
    """A path or patch that would reach outside the worktree."""


class Worktree:
    def __init__(self, base: Path, path: Path, name: str):
        git("worktree", "add", "-q", "--detach", str(path), "HEAD", cwd=base)
        self.base, self.root, self.name = base, path, name
        self.real = path.resolve()

    def remove(self) -> None:
        git("worktree", "remove", "--force", str(self.root), cwd=self.base, check=False)
        git("worktree", "prune", cwd=self.base, check=False)

    # -- path checks ---------------------------------------------------------------------------
    def resolve(self, path, *, must_exist: bool = False) -> Path:
        """The worktree path of a relative ``path``; ``Refused`` if it would leave the worktree."""
        if not isinstance(path, str) or not path.strip():
            raise Refused("path must be a non-empty string relative to the repository root")
        if "\0" in path:
            raise Refused("path contains a NUL character")
        rel = PurePosixPath(path)
        if rel.is_absolute() or path.startswith("~"):
            raise Escape(f"{path!r} is absolute; paths are relative to the repository root")
        if ".." in rel.parts:
            raise Escape(f"{path!r} contains '..'; paths must stay inside the repository")
        if rel.parts and rel.parts[0] == ".git":
            raise Escape(f"{path!r} is inside .git")
        if rel.name in GIT_METADATA:
            raise Escape(f"{path!r} is git metadata (it could change how the branches merge)")
        target = (self.root / rel).resolve()  # follows every symlink on the way
        if target != self.real and self.real not in target.parents:
            raise Escape(f"{path!r} resolves outside the repository (through a symlink)")
        if must_exist and not target.exists():
            raise Refused(f"{path!r} does not exist")
        return target

    # -- tools ---------------------------------------------------------------------------------
    def list_files(self, path: str = ".") -> str:
        top = self.resolve(path, must_exist=True)
        if top.is_file():
            return path
        out = []
        for p in sorted(top.rglob("*")):
            rel = p.relative_to(self.root)
            if rel.parts[0] == ".git" or p.is_dir():
                continue
            out.append(str(rel) + (" -> (symlink)" if p.is_symlink() else ""))
            if len(out) >= MAX_LIST:
                out.append(f"... (more than {MAX_LIST} files)")
                break
        return "\n".join(out) or "(no files)"

    def read_file(self, path: str) -> str:
        target = self.resolve(path, must_exist=True)
        if not target.is_file():
            raise Refused(f"{path!r} is not a file")
        text = target.read_bytes()[: 4 * MAX_READ].decode("utf-8", "replace")
        return text if len(text) <= MAX_READ else text[:MAX_READ] + f"\n[... cut at {MAX_READ} characters]"

    def write_file(self, path: str, content) -> str:
        if not isinstance(content, str):
            raise Refused("content must be a string (the whole new file)")
        target = self.resolve(path)
        if target.is_dir():
            raise Refused(f"{path!r} is a directory")
        target.parent.mkdir(parents=True, exist_ok=True)
        self.resolve(path)  # the directories just made cannot be links, but check the final path again
        target.write_text(content)
        return f"wrote {path} ({len(content)} characters)"

    def apply_patch(self, patch) -> str:
        if not isinstance(patch, str) or not patch.strip():
            raise Refused("patch must be a non-empty unified diff")
        if re.search(r"^(new file mode|new mode|old mode) 120000", patch, re.MULTILINE):
            raise Escape("patches may not create symlinks")
        names = re.findall(r"^(?:---|\+\+\+) (?:[ab]/)?(\S+)", patch, re.MULTILINE)
        names += [n for pair in re.findall(r"^diff --git a/(\S+) b/(\S+)", patch, re.MULTILINE) for n in pair]
        names += re.findall(r"^rename (?:from|to) (\S+)", patch, re.MULTILINE)
        if not names:
            raise Refused("not a unified diff (no ---/+++ file lines)")
        for name in names:
            if name != "/dev/null":
                self.resolve(name)
        if not patch.endswith("\n"):
            patch += "\n"
        result = git("apply", "--whitespace=nowarn", "--recount", "-", cwd=self.root, input=patch, check=False)
        if result.returncode:
            raise Refused("the patch does not apply: " + (result.stderr.strip() or "git apply failed")[:2000])
        return "patch applied"

    def diff(self) -> str:
        """The branch's patch against the base, new files included."""
        git("add", "-A", cwd=self.root)
        return git("diff", "--cached", "--binary", "HEAD", cwd=self.root).stdout
