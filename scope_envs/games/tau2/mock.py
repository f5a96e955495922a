"""The mock domain's tools (users with task lists), as in ``tau2/domains/mock/tools.py``; used by tests."""

from typing import Literal

from scope_envs.games.tau2.tools import GENERIC, READ, WRITE, ToolError, collect, tool

STATUS = Literal["pending", "completed"]


@tool(WRITE, "Create a new task for a user.", user_id="The ID of the user creating the task",
      title="The title of the task", description="Optional description of the task")
def create_task(s, user_id: str, title: str, description: str | None = None):
    if user_id not in s.db["users"]:
        raise ToolError(f"User {user_id} not found")
    task_id = f"task_{len(s.db['tasks']) + 1}"
    task = {"task_id": task_id, "title": title, "description": description, "status": "pending"}
    s.db["tasks"][task_id] = task
    s.db["users"].mut(user_id)["tasks"].append(task_id)
    return task


@tool(READ, "Get all users in the database.")
def get_users(s):
    return list(s.db["users"].values())


@tool(WRITE, "Update the status of a task.", task_id="The ID of the task to update",
      status="The new status of the task")
def update_task_status(s, task_id: str, status: STATUS):
    if task_id not in s.db["tasks"]:
        raise ToolError(f"Task {task_id} not found")
    task = s.db["tasks"].mut(task_id)
    task["status"] = status
    return task


@tool(GENERIC, "Transfer the user to a human agent, with a summary of the user's issue. Only transfer if the user "
               "explicitly asks for a human agent, or given the policy and the available tools, you cannot solve "
               "the user's issue.", summary="A summary of the user's issue.")
def transfer_to_human_agents(s, summary: str):
    return "Transfer successful"


def assert_number_of_tasks(s, user_id: str, expected_number: int) -> bool:
    if user_id not in s.db["users"]:
        raise ToolError(f"User {user_id} not found")
    return len(s.db["users"][user_id]["tasks"]) == expected_number


def assert_task_status(s, task_id: str, expected_status: str) -> bool:
    if task_id not in s.db["tasks"]:
        raise ToolError(f"Task {task_id} not found")
    return s.db["tasks"][task_id]["status"] == expected_status


TOOLS = collect(globals())
USER_TOOLS: dict = {}
FUNCTIONS = {**{n: t.fn for n, t in TOOLS.items()}, "assert_number_of_tasks": assert_number_of_tasks,
             "assert_task_status": assert_task_status}


def violations(s, name, args, seen_users):
    return []


def identifies(name, args, result):
    return None
