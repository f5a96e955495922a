"""Telecom task set-up and assertions: the environment functions a task's ``initial_state`` and
``env_assertions`` name, as in tau^2-bench (never offered to the agent or the user as tools).

``FUNCTIONS`` (``env_type`` ``assistant``): the carrier's tools plus account
set-up (``set_data_usage``, ``suspend_line_for_overdue_bill``) and assertions on
the carrier database. ``USER_FUNCTIONS`` (``env_type`` ``user``): the phone's
tools plus phone set-up (``set_user_info``, "breaking" the phone:
``turn_airplane_mode_on``, ``unseat_sim_card``, ``break_apn_settings``, ...) and
assertions on what the phone can do.
"""

from datetime import timedelta

from scope_envs.games.tau2.telecom_carrier import (TODAY, TOOLS, bill_by_id, customer_by_id, customer_line,
                                                   line_by_id, plan_by_id)
from scope_envs.games.tau2.telecom_phone import (USER_TOOLS, data_working, device, flip, internet_speed,
                                                 mms_possible, network_search, start_vpn, toggle_airplane)
from scope_envs.games.tau2.tools import ToolError


# ---------------------------------------------------------------- the carrier's side
def set_data_usage(s, customer_id: str, line_id: str, data_used_gb: float):
    s.own("lines")
    customer_line(s, customer_id, line_id)["data_used_gb"] = data_used_gb
    return f"Data usage set to {data_used_gb} GB for line {line_id}"


def suspend_line_for_overdue_bill(s, customer_id: str, line_id: str, new_bill_id: str, contract_ended: bool):
    s.own("lines", "bills", "customers")
    line = line_by_id(s, line_id)
    if line["status"] != "Active":
        raise ToolError("Line must be active to suspend for unpaid bill")
    amount = plan_by_id(s, line["plan_id"])["price_per_month"]
    if amount <= 0:
        raise ToolError("Amount must be positive for overdue bill")
    customer = customer_by_id(s, customer_id)
    if any(bill_by_id(s, i)["status"] == "Overdue" for i in customer["bill_ids"]):
        raise ToolError("Customer already has an overdue bill")
    last_day = TODAY.replace(day=1) - timedelta(days=1)
    first_day = last_day.replace(day=1)
    s.db["bills"].append({
        "bill_id": new_bill_id, "customer_id": customer_id, "period_start": first_day.isoformat(),
        "period_end": last_day.isoformat(), "issue_date": first_day.isoformat(), "total_due": 0 + amount,
        "due_date": (first_day + timedelta(days=14)).isoformat(),
        "line_items": [{"description": f"Charge for line {line_id}", "amount": amount, "date": TODAY.isoformat(),
                        "item_type": "Charge"}], "status": "Overdue"})
    customer["bill_ids"].append(new_bill_id)
    line["status"] = "Suspended"
    line["suspension_start_date"] = TODAY.isoformat()
    if contract_ended:
        line["contract_end_date"] = last_day.isoformat()
    return f"Line {line_id} suspended for unpaid bill {new_bill_id}. Contract ended: {contract_ended}"


def assert_data_refueling_amount(s, customer_id: str, line_id: str, expected_amount: float) -> bool:
    return abs(customer_line(s, customer_id, line_id)["data_refueling_gb"] - expected_amount) < 1e-6


def assert_line_status(s, customer_id: str, line_id: str, expected_status: str) -> bool:
    return customer_line(s, customer_id, line_id)["status"] == expected_status


def assert_overdue_bill_exists(s, customer_id: str, overdue_bill_id: str) -> bool:
    customer = customer_by_id(s, customer_id)
    if overdue_bill_id not in customer["bill_ids"]:
        raise ToolError(f"Overdue bill {overdue_bill_id} not found")
    if bill_by_id(s, overdue_bill_id)["status"] != "Overdue":
        raise ToolError(f"Overdue bill {overdue_bill_id} is not overdue")
    return True


def assert_no_overdue_bill(s, overdue_bill_id: str) -> bool:
    try:
        return bill_by_id(s, overdue_bill_id)["status"] == "Paid"
    except ToolError:
        return True


# ---------------------------------------------------------------- the phone
def set_user_info(s, name: str, phone_number: str):
    s.user_db["surroundings"]["name"], s.user_db["surroundings"]["phone_number"] = name, phone_number


def set_user_location(s, abroad: bool):
    s.user_db["surroundings"]["is_abroad"] = abroad


def _force(flag_key, value):
    """turn_X_on/off: toggle (with a network search) until the flag has ``value``, as upstream does."""
    def fn(s):
        if flip(s, flag_key) != value:
            flip(s, flag_key)
    return fn


def turn_airplane_mode_on(s):
    if not toggle_airplane(s):
        toggle_airplane(s)


def turn_airplane_mode_off(s):
    if toggle_airplane(s):
        toggle_airplane(s)


def turn_data_on(s):
    device(s)["data_enabled"] = True  # upstream sets the flag without a network search


def turn_data_saver_mode_on(s):
    device(s)["data_saver_mode"] = True


def turn_data_saver_mode_off(s):
    device(s)["data_saver_mode"] = False


def unseat_sim_card(s):
    device(s)["sim_card_missing"] = True
    network_search(s)


def lock_sim_card(s, mode: str):
    if mode in ("pin", "puk"):
        device(s)["sim_card_status"] = f"locked_{mode}"
    network_search(s)


def break_apn_settings(s):
    device(s)["active_apn_settings"]["apn_name"] = "broken"
    network_search(s)


def break_apn_mms_setting(s):
    device(s)["active_apn_settings"]["mmsc_url"] = None


def break_vpn(s):
    start_vpn(device(s))
    device(s)["vpn_details"]["server_performance"] = "poor"


def set_wifi_calling(s, enabled: bool, mms_over_wifi: bool | None = None):
    d = device(s)
    d["wifi_calling_enabled"] = enabled
    if mms_over_wifi is not None:
        d["wifi_calling_mms_over_wifi"] = mms_over_wifi


def remove_app_permission(s, app_name: str, permission: str):
    app = device(s)["app_statuses"].get(app_name)
    if app is not None and permission.lower() in app["permissions"]:
        app["permissions"][permission.lower()] = False


def simulate_network_search(s):
    network_search(s)


def assert_airplane_mode_status(s, expected_status: bool) -> bool:
    return device(s)["airplane_mode"] == expected_status


def assert_service_status(s, expected_status: str) -> bool:
    return device(s)["network_connection_status"] == expected_status


def assert_mobile_data_status(s, expected_status: bool) -> bool:
    return data_working(s) == expected_status


def assert_mobile_roaming_status(s, expected_status: bool) -> bool:
    return device(s)["roaming_enabled"] == expected_status


def assert_mobile_data_saver_mode_status(s, expected_status: bool) -> bool:
    return device(s)["data_saver_mode"] == expected_status


def assert_internet_speed(s, expected_speed: float, expected_desc: str | None = None) -> bool:
    speed, desc = internet_speed(s)
    speed = speed or 0.0
    return speed >= expected_speed and (expected_desc is None or desc.lower() == expected_desc.lower())


def assert_internet_not_excellent(s) -> bool:
    return internet_speed(s)[1].lower() != "excellent"


def assert_can_send_mms(s, expected_status: bool) -> bool:
    return mms_possible(s) == expected_status


def assert_mobile_data_usage_exceeded(s, expected_status: bool) -> bool:
    return s.user_db["surroundings"]["mobile_data_usage_exceeded"] == expected_status


FUNCTIONS = {
    **{n: t.fn for n, t in TOOLS.items()}, "set_data_usage": set_data_usage,
    "suspend_line_for_overdue_bill": suspend_line_for_overdue_bill,
    "assert_data_refueling_amount": assert_data_refueling_amount, "assert_line_status": assert_line_status,
    "assert_overdue_bill_exists": assert_overdue_bill_exists, "assert_no_overdue_bill": assert_no_overdue_bill,
}
USER_FUNCTIONS = {
    **{n: t.fn for n, t in USER_TOOLS.items()},
    "set_user_info": set_user_info, "set_user_location": set_user_location,
    "turn_airplane_mode_on": turn_airplane_mode_on, "turn_airplane_mode_off": turn_airplane_mode_off,
    "turn_data_on": turn_data_on, "turn_data_off": _force("data_enabled", False),
    "turn_roaming_on": _force("roaming_enabled", True), "turn_roaming_off": _force("roaming_enabled", False),
    "turn_data_saver_mode_on": turn_data_saver_mode_on, "turn_data_saver_mode_off": turn_data_saver_mode_off,
    "unseat_sim_card": unseat_sim_card, "lock_sim_card": lock_sim_card, "break_apn_settings": break_apn_settings,
    "break_apn_mms_setting": break_apn_mms_setting, "break_vpn": break_vpn, "set_wifi_calling": set_wifi_calling,
    "remove_app_permission": remove_app_permission, "simulate_network_search": simulate_network_search,
    "assert_airplane_mode_status": assert_airplane_mode_status, "assert_service_status": assert_service_status,
    "assert_mobile_data_status": assert_mobile_data_status,
    "assert_mobile_roaming_status": assert_mobile_roaming_status,
    "assert_mobile_data_saver_mode_status": assert_mobile_data_saver_mode_status,
    "assert_internet_speed": assert_internet_speed, "assert_internet_not_excellent": assert_internet_not_excellent,
    "assert_can_send_mms": assert_can_send_mms, "assert_mobile_data_usage_exceeded": assert_mobile_data_usage_exceeded,
}
