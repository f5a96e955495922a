"""Telecom, the customer's side: the simulated phone and the user's tools on it, as in tau^2-bench.

The phone is ``state.user_db``: ``device`` (SIM, radios, network mode, APN,
Wi-Fi, VPN, apps and their permissions) and ``surroundings`` (the line as the
phone sees it, signal per network type, abroad or not, a payment request).
``network_search`` reconnects after a change, as upstream's
``simulate_network_search``; ``data_working``, ``internet_speed`` and
``mms_possible`` are what the user's checks and the task assertions read.
``USER_TOOLS`` are the customer's tools; each change answers with the new status
bar. The phone never reads the carrier database: ``telecom.sync`` pushes the
account's state into ``surroundings`` after every call.

Upstream shares one ``VpnDetails`` object between phones, so ``break_vpn`` in one
task degrades the default VPN of every later task in that process; here each
phone gets its own copy.
"""

from scope_envs.games.tau2.state import clone, merge
from scope_envs.games.tau2.tools import READ, WRITE, ToolError, collect, tool

MODES = ("4g_5g_preferred", "4g_only", "3g_only", "2g_only")
DEFAULT_APN = {"apn_name": "internet", "reset_at_reboot": False, "mms_apn": "mms",
               "mmsc_url": "http://mms.carrier.com/mms/wapenc", "mms_proxy": None, "mms_port": None}
DEFAULT_VPN = {"server_address": "192.168.1.1", "protocol": "OpenVPN", "server_performance": "excellent"}
DEFAULT_USER_DB = {
    "device": {
        "sim_card_status": "active", "sim_card_missing": False, "airplane_mode": False,
        "network_signal_strength": "good", "network_technology_connected": "5G",
        "network_connection_status": "connected", "battery_level": 80, "data_enabled": True,
        "roaming_enabled": False, "network_mode_preference": "4g_5g_preferred", "active_apn_settings": DEFAULT_APN,
        "wifi_enabled": False, "wifi_connected": False, "wifi_ssid": None, "wifi_signal_strength": "none",
        "wifi_calling_enabled": False, "wifi_calling_mms_over_wifi": False, "data_saver_mode": False,
        "vpn_enabled_setting": False, "vpn_connected": False, "vpn_details": None,
        "app_statuses": {
            "messaging": {"app_name": "messaging",
                          "permissions": {"sms": True, "storage": True, "phone": True, "network": False}},
            "browser": {"app_name": "browser",
                        "permissions": {"sms": False, "storage": True, "phone": False, "network": True}}},
    },
    "surroundings": {
        "name": None, "phone_number": None, "is_abroad": False, "roaming_allowed": False,
        "signal_strength": {"2G": "poor", "3G": "fair", "4G": "good", "5G": "excellent"},
        "mobile_data_usage_exceeded": False, "line_active": True, "payment_request": None,
    },
}


def normalize_user_db(user_db: dict | None) -> dict:
    """The phone with every field upstream's pydantic defaults would fill (the TOML lists only some)."""
    out = clone(DEFAULT_USER_DB)
    if user_db:
        merge(out, user_db)
    return out


# ---------------------------------------------------------------- the device
def device(s):
    """The phone's settings and state (``user_db["device"]``)."""
    return s.user_db["device"]


def _sim_status(d):
    return "missing" if d["sim_card_missing"] else d["sim_card_status"]


SIGNAL_ICONS = {"none": "📵 No Signal", "poor": "📶¹ Poor", "fair": "📶² Fair", "good": "📶³ Good",
                "excellent": "📶⁴ Excellent"}


def _status_bar(s):
    d = device(s)
    parts = []
    if d["airplane_mode"]:
        parts.append("✈️ Airplane Mode")
    else:
        parts.append(SIGNAL_ICONS.get(d["network_signal_strength"], "📵 No Signal"))
        if d["network_technology_connected"] != "none":
            parts.append(d["network_technology_connected"])
        if d["data_enabled"] and d["network_technology_connected"] != "none":
            parts.append("📱 Data Enabled")
            if d["data_saver_mode"]:
                parts.append("🔽 Data Saver")
        else:
            parts.append("📵 Data Disabled")
    if d["wifi_enabled"] and d["wifi_connected"]:
        parts.append(f"📡 Connected to {d['wifi_ssid']}" if d["wifi_ssid"] else "📡 Enabled")
    if d["vpn_connected"]:
        parts.append("🔒 VPN Connected")
    parts.append(f"🔋 {d['battery_level']}%")
    return " | ".join(parts)


def _with_bar(s, text):
    return f"{text}\nStatus Bar: {_status_bar(s)}"


def network_search(s):
    """Reconnect after a change (upstream ``simulate_network_search``)."""
    d, sig = device(s), s.user_db["surroundings"]["signal_strength"]
    if _sim_status(d) == "active":
        d["network_connection_status"] = "connected"
        pref = d["network_mode_preference"]
        if pref == "4g_5g_preferred":
            tech = "4G" if sig.get("5G", "none") == "none" else "5G"
        else:
            tech = {"4g_only": "4G", "3g_only": "3G", "2g_only": "2G"}.get(pref, "4G")
        d["network_technology_connected"] = tech
        d["network_signal_strength"] = sig.get(tech, "none")
    else:
        _no_service(d)
    if (d["airplane_mode"] or d["active_apn_settings"]["apn_name"] == "broken"
            or not s.user_db["surroundings"]["line_active"]):
        _no_service(d)


def _no_service(d):
    d["network_connection_status"] = "no_service"
    d["network_technology_connected"] = "none"
    d["network_signal_strength"] = "none"


def data_working(s):
    """Whether mobile data works now (radio, service, roaming abroad, data switched on, allowance left)."""
    d, sur = device(s), s.user_db["surroundings"]
    if d["airplane_mode"] or d["network_signal_strength"] == "none":
        return False
    if d["network_connection_status"] == "no_service":
        return False
    if sur["is_abroad"] and (not d["roaming_enabled"] or not sur["roaming_allowed"]):
        return False
    return bool(d["data_enabled"]) and not sur["mobile_data_usage_exceeded"]


def internet_speed(s):
    """``(Mbps, label)`` of a speed test; ``(None, "No Connection")`` without mobile data."""
    if not data_working(s):
        return None, "No Connection"
    d = device(s)
    factor = 0.1 if (d["vpn_connected"] and d["vpn_details"]
                     and d["vpn_details"]["server_performance"] == "poor") else 1.0
    if d["data_saver_mode"]:
        factor *= 0.2
    lo, hi = {"2G": (0.1, 0.4), "3G": (1.0, 5.0), "4G": (10.0, 100.0), "5G": (50.0, 500.0)}.get(
        d["network_technology_connected"], (0.0, 0.0))
    sig = {"poor": 0.2, "fair": 0.5, "good": 0.8, "excellent": 1.0}.get(d["network_signal_strength"], 0.0)
    speed = round((lo + hi) / 2.0 * sig * factor, 2)
    desc = ("Very Poor" if speed < 1 else "Poor" if speed < 5 else "Fair" if speed < 25
            else "Good" if speed < 100 else "Excellent")
    return speed, desc


def mms_possible(s):
    """Whether the messaging app can send an MMS now."""
    d = device(s)
    if not data_working(s) or d["network_technology_connected"] == "2G":
        return False
    if d["wifi_calling_enabled"] and d["wifi_calling_mms_over_wifi"]:
        return False
    if d["active_apn_settings"]["mmsc_url"] is None:
        return False
    app = d["app_statuses"].get("messaging")
    return bool(app and app["permissions"]["storage"] and app["permissions"]["sms"])


def toggle_airplane(s):
    """Flip airplane mode: Wi-Fi disconnects (and, turning it on, the VPN), the phone reconnects; the new setting."""
    d = device(s)
    was_on = d["airplane_mode"]
    d["airplane_mode"] = not was_on
    if was_on:
        d["network_connection_status"] = "searching"
        if d["wifi_enabled"]:
            d["wifi_connected"], d["wifi_ssid"], d["wifi_signal_strength"] = False, None, "none"
    else:
        d["wifi_connected"], d["wifi_ssid"], d["wifi_signal_strength"] = False, None, "none"
        if d["vpn_connected"]:
            stop_vpn(d)
    network_search(s)
    return d["airplane_mode"]


def stop_vpn(d):
    """Disconnect the VPN of device ``d``; False when none was connected."""
    if not d["vpn_connected"]:
        return False
    d["vpn_connected"], d["vpn_details"] = False, None
    return True


def start_vpn(d):
    """Connect device ``d`` to the default VPN (its own copy); None when already connected."""
    if d["vpn_connected"]:
        return None
    d["vpn_connected"], d["vpn_details"] = True, dict(DEFAULT_VPN)
    return True


def flip(s, key, search=True):
    """Flip a device switch (then reconnect, unless ``search`` is False); the new setting."""
    d = device(s)
    d[key] = not d[key]
    if search:
        network_search(s)
    return d[key]


# ---------------------------------------------------------------- the user's tools
@tool(READ, "Shows what icons are currently visible in your phone's status bar: signal, network type, data, "
            "Wi-Fi, VPN, airplane mode and battery.")
def check_status_bar(s):
    return f"Status Bar: {_status_bar(s)}"


@tool(READ, "Checks your phone's connection status to cellular networks and Wi-Fi: airplane mode, SIM, signal, "
            "network type, mobile data, roaming and Wi-Fi.")
def check_network_status(s):
    d = device(s)
    lines = [f"Airplane Mode: {'ON' if d['airplane_mode'] else 'OFF'}", f"SIM Card Status: {_sim_status(d)}",
             f"Cellular Connection: {d['network_connection_status']}",
             f"Cellular Signal: {d['network_signal_strength']}",
             f"Cellular Network Type: {d['network_technology_connected']}",
             f"Mobile Data Enabled: {'Yes' if d['data_enabled'] else 'No'}",
             f"Data Roaming Enabled: {'Yes' if d['roaming_enabled'] else 'No'}",
             f"Wi-Fi Radio: {'ON' if d['wifi_enabled'] else 'OFF'}",
             f"Wi-Fi Connected: {'Yes' if d['wifi_connected'] else 'No'}"]
    if d["wifi_connected"]:
        lines.append(f"Connected Wi-Fi Network: {d['wifi_ssid']}")
    return "\n".join(lines)


@tool(READ, "Shows the current network mode preference.")
def check_network_mode_preference(s):
    return f"Network Mode Preference: {device(s)['network_mode_preference']}"


@tool(WRITE, "Changes the type of cellular network your phone prefers to connect to (e.g. 5G, LTE/4G, 3G).",
      mode=f"The network mode preference, one of {', '.join(MODES)}.")
def set_network_mode_preference(s, mode: str):
    if mode not in MODES:
        return _with_bar(s, f"Failed to set network mode: '{mode}' is not a valid option. Please use one of: "
                            f"{', '.join(MODES)}")
    device(s)["network_mode_preference"] = mode
    network_search(s)
    return _with_bar(s, f"Preferred Network Mode set to: {mode}")


@tool(READ, "Measures your current internet connection speed (download speed) and what it can support.")
def run_speed_test(s):
    speed, desc = internet_speed(s)
    if speed is None:
        return f"Speed test failed: {desc or 'Could not determine speed'}."
    advice = {"Very Poor": "Connection is very slow. Basic web browsing might be difficult.",
              "Poor": "Connection is slow. Web browsing may be sluggish, streaming difficult.",
              "Fair": "Connection is okay for web browsing and some standard definition streaming.",
              "Good": "Connection is good for most activities, including HD streaming.",
              "Excellent": "Connection is very fast."}.get(desc, "")
    return f"Speed Test Result: {speed:.2f} Mbps ({desc}). {advice}"


@tool(WRITE, "Toggles Airplane Mode ON or OFF. When ON, it disconnects all wireless communications.")
def toggle_airplane_mode(s):
    return _with_bar(s, f"Airplane Mode is now {'ON' if toggle_airplane(s) else 'OFF'}.")


@tool(READ, "Checks if your SIM card is working correctly and displays its current status.")
def check_sim_status(s):
    return {"active": "Your SIM card is active and working.", "missing": "No SIM card detected in the phone.",
            "locked_pin": "The SIM card is locked with a PIN code.",
            "locked_puk": "The SIM card is locked with a PUK code."}.get(_sim_status(device(s)), "Unknown SIM status")


@tool(WRITE, "Removes and reinserts your SIM card, which can help with recognition issues.")
def reseat_sim_card(s):
    device(s)["sim_card_missing"] = False
    network_search(s)
    return _with_bar(s, "SIM card re-seated successfully.")


@tool(WRITE, "Toggles your phone's mobile data connection ON or OFF.")
def toggle_data(s):
    return _with_bar(s, f"Mobile Data is now {'ON' if flip(s, 'data_enabled') else 'OFF'}.")


@tool(WRITE, "Toggles Data Roaming ON or OFF. When ON, your phone can use data networks outside your home network.")
def toggle_roaming(s):
    return _with_bar(s, f"Data Roaming is now {'ON' if flip(s, 'roaming_enabled') else 'OFF'}.")


@tool(READ, "Checks if your phone has any data-limiting features active (Data Saver).")
def check_data_restriction_status(s):
    return "Data Saver mode is ON (limits data usage)." if device(s)["data_saver_mode"] else "Data Saver mode is OFF."


@tool(WRITE, "Toggles Data Saver mode ON or OFF. When ON, it reduces data usage, which may slow your connection.")
def toggle_data_saver_mode(s):
    return _with_bar(s, f"Data Saver Mode is now {'ON' if flip(s, 'data_saver_mode', False) else 'OFF'}.")


@tool(READ, "Checks the technical APN settings your phone uses to connect to your carrier's mobile data network.")
def check_apn_settings(s):
    apn = device(s)["active_apn_settings"]
    return (f"Current APN Name: {apn['apn_name'] or 'Not Set'}\nMMSC URL (for picture messages): "
            f"{apn['mmsc_url'] or 'Not Set'}\n(These are technical settings, usually best left unchanged.)")


@tool(WRITE, "Sets the APN settings for the phone.",
      apn_settings="The APN settings: apn_name ('internet' or 'broken'), reset_at_reboot, mms_apn, mmsc_url, "
                   "mms_proxy, mms_port.")
def set_apn_settings(s, apn_settings: dict):
    unknown = set(apn_settings) - set(DEFAULT_APN)
    if unknown:
        raise ToolError(f"unknown APN setting(s) {sorted(unknown)}")
    if apn_settings.get("apn_name", "internet") not in ("internet", "broken"):
        raise ToolError(f"apn_name must be 'internet' or 'broken', got {apn_settings['apn_name']!r}")
    device(s)["active_apn_settings"] = {**DEFAULT_APN, **apn_settings}
    network_search(s)
    return _with_bar(s, f"APN settings set to: {device(s)['active_apn_settings']['apn_name']}")


@tool(WRITE, "Resets your APN settings to the default settings (applied at the next reboot).")
def reset_apn_settings(s):
    device(s)["active_apn_settings"]["reset_at_reboot"] = True
    network_search(s)
    return _with_bar(s, "APN settings will reset at reboot.")


@tool(READ, "Checks your Wi-Fi connection status: on or off, the network and its signal.")
def check_wifi_status(s):
    d = device(s)
    if not d["wifi_enabled"]:
        return "Wi-Fi is turned OFF."
    if d["wifi_connected"]:
        return f"Wi-Fi is ON and connected to '{d['wifi_ssid']}'. Signal strength: {d['wifi_signal_strength']}."
    return "Wi-Fi is ON but not connected to any network."


@tool(WRITE, "Toggles your phone's Wi-Fi radio ON or OFF.")
def toggle_wifi(s):
    d = device(s)
    if d["airplane_mode"]:
        return _with_bar(s, "Cannot change Wi-Fi settings while Airplane Mode is ON.")
    d["wifi_enabled"] = not d["wifi_enabled"]
    if not d["wifi_enabled"]:
        d["wifi_connected"], d["wifi_ssid"], d["wifi_signal_strength"] = False, None, "none"
    return _with_bar(s, f"Wi-Fi is now {'ON' if d['wifi_enabled'] else 'OFF'}.")


@tool(READ, "Checks if Wi-Fi Calling is enabled on your device.")
def check_wifi_calling_status(s):
    return f"Wi-Fi Calling is currently turned {'ON' if device(s)['wifi_calling_enabled'] else 'OFF'}."


@tool(WRITE, "Toggles Wi-Fi Calling ON or OFF (calls and texts over Wi-Fi).")
def toggle_wifi_calling(s):
    return _with_bar(s, f"Wi-Fi Calling is now {'ON' if flip(s, 'wifi_calling_enabled', False) else 'OFF'}.")


@tool(READ, "Checks if you're using a VPN connection, and its details.")
def check_vpn_status(s):
    d = device(s)
    if d["vpn_connected"]:
        if d["vpn_details"]:
            return f"VPN is ON and connected. Details: {d['vpn_details']}"
        return "VPN is ON and connected (no specific details available)."
    if d["vpn_enabled_setting"]:
        return "VPN is turned ON in settings, but currently not connected."
    return "VPN is turned OFF."


@tool(WRITE, "Connects to your VPN.")
def connect_vpn(s):
    if start_vpn(device(s)) is None:
        return "VPN already connected."
    return _with_bar(s, "VPN connected successfully.")


@tool(WRITE, "Disconnects any active VPN connection.")
def disconnect_vpn(s):
    ok = stop_vpn(device(s))
    return _with_bar(s, "VPN disconnected successfully." if ok else "No active VPN connection to disconnect.")


@tool(READ, "Returns the name of all installed apps on the phone.")
def check_installed_apps(s):
    return f"The following apps are installed on the phone: {', '.join(device(s)['app_statuses'])}"


@tool(READ, "Checks detailed information about a specific app, including its permissions.",
      app_name="The name of the app.")
def check_app_status(s, app_name: str):
    app = device(s)["app_statuses"].get(app_name)
    if app is None:
        return f"App '{app_name}' not found on this phone."
    perms = [k.replace("_", " ").lower() for k, v in app["permissions"].items() if v]
    lines = [f"Status for App: {app_name}"]
    lines += [" - Permissions Granted:"] + [f"   - {p}" for p in perms] if perms else [" - Permissions: None granted."]
    return "\n".join(lines)


@tool(READ, "Checks what permissions a specific app currently has.", app_name="The name of the app.")
def check_app_permissions(s, app_name: str):
    app = device(s)["app_statuses"].get(app_name)
    if app is None:
        return f"App '{app_name}' not found on this phone."
    perms = [k.replace("_", " ").lower() for k, v in app["permissions"].items() if v]
    if not perms:
        return f"App '{app_name}' currently has no permissions granted."
    return f"App '{app_name}' has permission for: {', '.join(perms)}."


@tool(WRITE, "Gives a specific permission to an app (sms, storage, phone or network).",
      app_name="The name of the app.", permission="The permission to grant.")
def grant_app_permission(s, app_name: str, permission: str):
    app = device(s)["app_statuses"].get(app_name)
    permission = permission.lower()
    if app is None:
        ok, msg = False, f"App '{app_name}' not found. Cannot grant permission."
    elif permission not in app["permissions"]:
        ok, msg = False, (f"Permission '{permission}' not tracked for app '{app_name}', available permissions: "
                          f"{list(app['permissions'])}")
    else:
        app["permissions"][permission] = True
        ok, msg = True, f"Permission '{permission}' granted to app '{app_name}'."
    return _with_bar(s, ("Success. " if ok else "Error. ") + msg)


@tool(READ, "Checks if the default messaging app can send MMS messages.")
def can_send_mms(s):
    return ("Your messaging app can send MMS messages." if mms_possible(s)
            else "Your messaging app cannot send MMS messages.")


@tool(WRITE, "Restarts your phone completely, which can resolve many temporary software glitches.")
def reboot_device(s):
    d, lines = device(s), []
    if d["active_apn_settings"]["reset_at_reboot"]:
        lines.append("Resetting APN settings...")
        d["active_apn_settings"] = dict(DEFAULT_APN)
    lines.append("Restarting network services...")
    d["network_connection_status"] = "searching"
    network_search(s)
    return _with_bar(s, "\n".join(lines))


@tool(READ, "Checks if the agent has sent you a payment request.")
def check_payment_request(s):
    req = s.user_db["surroundings"]["payment_request"]
    if req is None:
        return "No payment request has been made."
    return f"You have a payment request for bill {req['bill_id']} of {req['amount_due']} USD."


@tool(WRITE, "Makes a payment for the bill that the agent has sent you.")
def make_payment(s):
    req = s.user_db["surroundings"]["payment_request"]
    if req is None:
        return "You do not have a payment request."
    req["paid"] = True
    return f"Payment of {req['amount_due']} USD has been made for bill {req['bill_id']}."


USER_TOOLS = collect(globals())
