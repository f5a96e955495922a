"""Retail agent tools with tau^2-bench's semantics (``tau2/domains/retail/tools.py``).

Refunds go to the original payment methods; a gift card is credited at once
(balances rounded to cents), other methods are only recorded in the order's
payment history. Upstream quirk kept on purpose (gold databases depend on it):
``modify_pending_order_items`` gives every modified item the price and options of
the *last* new item in the call.
"""

import json

from scope_envs.games.tau2 import arithmetic
from scope_envs.games.tau2.state import Table
from scope_envs.games.tau2.tools import GENERIC, READ, WRITE, ToolError, collect, tool

ORDER_ID = "The order id, such as '#W0000000'. Be careful there is a '#' symbol at the beginning of the order id."
PAYMENT_ID = ("The payment method id to pay or receive refund for the item price difference, such as "
              "'gift_card_0000000' or 'credit_card_0000000'. These can be looked up from the user or order details.")
ADDRESS = dict(address1="The first line of the address, such as '123 Main St'.",
               address2="The second line of the address, such as 'Apt 1' or ''.",
               city="The city, such as 'San Francisco'.", state="The state, such as 'CA'.",
               country="The country, such as 'USA'.", zip="The zip code, such as '12345'.")


def _order(s, order_id):
    if order_id not in s.db["orders"]:
        raise ToolError("Order not found")
    return s.db["orders"][order_id]


def _user(s, user_id):
    if user_id not in s.db["users"]:
        raise ToolError("User not found")
    return s.db["users"][user_id]


def _variant(s, product_id, item_id):
    if product_id not in s.db["products"]:
        raise ToolError("Product not found")
    variants = s.db["products"][product_id]["variants"]
    if item_id not in variants:
        raise ToolError("Variant not found")
    return variants[item_id]


def _method(s, user_id, method_id):
    user = _user(s, user_id)
    if method_id not in user["payment_methods"]:
        raise ToolError("Payment method not found")
    return user["payment_methods"][method_id]


def _credit(s, user_id, method_id, amount):
    """Add ``amount`` to a gift card's balance (negative to charge it), rounded to cents."""
    m = s.db["users"].mut(user_id)["payment_methods"][method_id]
    m["balance"] = round(m["balance"] + amount, 2)


def _count_check(item_ids, order, message):
    have = [i["item_id"] for i in order["items"]]
    for item_id in item_ids:
        if item_ids.count(item_id) > have.count(item_id):
            raise ToolError(message.format(item_id=item_id))


def _price_difference(s, order, item_ids, new_item_ids, forbid_same):
    diff, variant = 0, None
    for item_id, new_id in zip(item_ids, new_item_ids):
        if forbid_same and item_id == new_id:
            raise ToolError("The new item id should be different from the old item id")
        item = next((i for i in order["items"] if i["item_id"] == item_id), None)
        if item is None:
            raise ToolError(f"Item {item_id} not found")
        variant = _variant(s, item["product_id"], new_id)
        if not variant["available"]:
            raise ToolError(f"New item {new_id} not found or available")
        diff += variant["price"] - item["price"]
    return diff, variant


@tool(GENERIC, "Calculate the result of a mathematical expression.",
      expression="The mathematical expression to calculate, such as '2 + 2'. The expression can contain numbers, "
                 "operators (+, -, *, /), parentheses, and spaces.")
def calculate(s, expression: str):
    return arithmetic.calculate(expression)  # upstream's eval, bounded (arithmetic.py)


@tool(WRITE, "Cancel a pending order. If the order is already processed or delivered, it cannot be cancelled. The "
             "agent needs to explain the cancellation detail and ask for explicit user confirmation (yes/no) to "
             "proceed. If the user confirms, the order status will be changed to 'cancelled' and the payment will "
             "be refunded. The refund will be added to the user's gift card balance immediately if the payment was "
             "made using a gift card, otherwise the refund would take 5-7 business days to process. The function "
             "returns the order details after the cancellation.",
      order_id=ORDER_ID, reason="The reason for cancellation, which should be either 'no longer needed' or "
                                "'ordered by mistake'.")
def cancel_pending_order(s, order_id: str, reason: str):
    order = _order(s, order_id)
    if order["status"] != "pending":
        raise ToolError("Non-pending order cannot be cancelled")
    if reason not in ("no longer needed", "ordered by mistake"):
        raise ToolError("Invalid reason")
    refunds = []
    for p in order["payment_history"]:
        refunds.append({"transaction_type": "refund", "amount": p["amount"], "payment_method_id": p["payment_method_id"]})
        _user(s, order["user_id"])
        method = _method(s, order["user_id"], p["payment_method_id"])
        if method["source"] == "gift_card":
            _credit(s, order["user_id"], p["payment_method_id"], p["amount"])
    order = s.db["orders"].mut(order_id)
    order["status"] = "cancelled"
    order["cancel_reason"] = reason
    order["payment_history"].extend(refunds)
    return order


@tool(WRITE, "Exchange items in a delivered order to new items of the same product type. For a delivered order, "
             "return or exchange can be only done once by the agent. The agent needs to explain the exchange detail "
             "and ask for explicit user confirmation (yes/no) to proceed.",
      order_id=ORDER_ID,
      item_ids="The item ids to be exchanged, each such as '1008292230'. There could be duplicate items in the list.",
      new_item_ids="The item ids to be exchanged for, each such as '1008292230'. There could be duplicate items in "
                   "the list. Each new item id should match the item id in the same position and be of the same "
                   "product.",
      payment_method_id=PAYMENT_ID)
def exchange_delivered_order_items(s, order_id: str, item_ids: list[str], new_item_ids: list[str],
                                   payment_method_id: str):
    order = _order(s, order_id)
    if order["status"] != "delivered":
        raise ToolError("Non-delivered order cannot be exchanged")
    _count_check(item_ids, order, "Number of {item_id} not found.")
    if len(item_ids) != len(new_item_ids):
        raise ToolError("The number of items to be exchanged should match.")
    diff, _ = _price_difference(s, order, item_ids, new_item_ids, forbid_same=False)
    diff = round(diff, 2)
    method = _method(s, order["user_id"], payment_method_id)
    if method["source"] == "gift_card" and method["balance"] < diff:
        raise ToolError("Insufficient gift card balance to pay for the price difference")
    order = s.db["orders"].mut(order_id)
    order["status"] = "exchange requested"
    order["exchange_items"] = sorted(item_ids)
    order["exchange_new_items"] = sorted(new_item_ids)
    order["exchange_payment_method_id"] = payment_method_id
    order["exchange_price_difference"] = diff
    return order


def _name_zip(u) -> tuple:
    return u["name"]["first_name"].lower(), u["name"]["last_name"].lower(), u["address"]["zip"]


def _email(u) -> tuple:
    return (u["email"].lower(),)


def _find_user(s, name: str, key_of, args: tuple) -> list | None:
    """The users the lookup's scan below would match, in its order, from the users' index (a scan reads every
    user: 500 in the real retail data, at every identity lookup, mistyped ones included); None where the scan
    must run: arguments that are not all strings (the index compares strings as the scan does), users not held in
    a copy-on-write ``Table``, or a record the index cannot read (the scan meets it as it always has)."""
    users = s.db["users"]
    if not isinstance(users, Table) or not all(isinstance(a, str) for a in args):
        return None
    value = (args[0].lower(), args[1].lower(), args[2]) if name == "name_zip" else (args[0].lower(),)
    return users.find(name, key_of, value)


@tool(READ, "Find user id by first name, last name, and zip code. If the user is not found, the function will "
            "return an error message. By default, find user id by email, and only call this function if the user "
            "is not found by email or cannot remember email.",
      first_name="The first name of the customer, such as 'John'.",
      last_name="The last name of the customer, such as 'Doe'.", zip="The zip code of the customer, such as '12345'.")
def find_user_id_by_name_zip(s, first_name: str, last_name: str, zip: str):
    found = _find_user(s, "name_zip", _name_zip, (first_name, last_name, zip))
    if found is not None:
        if found:
            return found[0]
        raise ToolError("User not found")
    for uid, u in s.db["users"].items():
        if (u["name"]["first_name"].lower() == first_name.lower()
                and u["name"]["last_name"].lower() == last_name.lower() and u["address"]["zip"] == zip):
            return uid
    raise ToolError("User not found")


@tool(READ, "Find user id by email. If the user is not found, the function will return an error message.",
      email="The email of the user, such as 'something@example.com'.")
def find_user_id_by_email(s, email: str):
    found = _find_user(s, "email", _email, (email,))
    if found is not None:
        if found:
            return found[0]
        raise ToolError("User not found")
    for uid, u in s.db["users"].items():
        if u["email"].lower() == email.lower():
            return uid
    raise ToolError("User not found")


@tool(READ, "Get the status and details of an order.", order_id=ORDER_ID)
def get_order_details(s, order_id: str):
    return _order(s, order_id)


@tool(READ, "Get the inventory details of a product.",
      product_id="The product id, such as '6086499569'. Be careful the product id is different from the item id.")
def get_product_details(s, product_id: str):
    if product_id not in s.db["products"]:
        raise ToolError("Product not found")
    return s.db["products"][product_id]


@tool(READ, "Get the details of a user, including their orders.", user_id="The user id, such as 'sara_doe_496'.")
def get_user_details(s, user_id: str):
    return _user(s, user_id)


@tool(READ, "List the name and product id of all product types. Each product type has a variety of different items "
            "with unique item ids and options. There are only 50 product types in the store.")
def list_all_product_types(s):
    return json.dumps({p["name"]: p["product_id"] for p in s.db["products"].values()}, sort_keys=True)


def _address(address1, address2, city, state, country, zip):
    return {"address1": address1, "address2": address2, "city": city, "country": country, "state": state, "zip": zip}


@tool(WRITE, "Modify the shipping address of a pending order. The agent needs to explain the modification detail "
             "and ask for explicit user confirmation (yes/no) to proceed.", order_id=ORDER_ID, **ADDRESS)
def modify_pending_order_address(s, order_id: str, address1: str, address2: str, city: str, state: str,
                                 country: str, zip: str):
    order = _order(s, order_id)
    if "pending" not in order["status"]:
        raise ToolError("Non-pending order cannot be modified")
    order = s.db["orders"].mut(order_id)
    order["address"] = _address(address1, address2, city, state, country, zip)
    return order


@tool(WRITE, "Modify items in a pending order to new items of the same product type. For a pending order, this "
             "function can only be called once. The agent needs to explain the exchange detail and ask for explicit "
             "user confirmation (yes/no) to proceed.",
      order_id=ORDER_ID,
      item_ids="The item ids to be modified, each such as '1008292230'. There could be duplicate items in the list.",
      new_item_ids="The item ids to be modified for, each such as '1008292230'. There could be duplicate items in "
                   "the list. Each new item id should match the item id in the same position and be of the same "
                   "product.",
      payment_method_id=PAYMENT_ID)
def modify_pending_order_items(s, order_id: str, item_ids: list[str], new_item_ids: list[str],
                               payment_method_id: str):
    order = _order(s, order_id)
    if order["status"] != "pending":
        raise ToolError("Non-pending order cannot be modified")
    _count_check(item_ids, order, "{item_id} not found")
    if len(item_ids) != len(new_item_ids):
        raise ToolError("The number of items to be exchanged should match")
    diff, variant = _price_difference(s, order, item_ids, new_item_ids, forbid_same=True)
    method = _method(s, order["user_id"], payment_method_id)
    if method["source"] == "gift_card" and method["balance"] < diff:
        raise ToolError("Insufficient gift card balance to pay for the new item")
    order = s.db["orders"].mut(order_id)
    order["payment_history"].append({"transaction_type": "payment" if diff > 0 else "refund",
                                     "amount": abs(diff), "payment_method_id": payment_method_id})
    if method["source"] == "gift_card":
        _credit(s, order["user_id"], payment_method_id, -diff)
    for item_id, new_id in zip(item_ids, new_item_ids):
        item = next((i for i in order["items"] if i["item_id"] == item_id), None)
        if item is None:
            raise ToolError(f"Item {item_id} not found")
        item["item_id"] = new_id
        item["price"] = variant["price"]  # upstream: the last new item's price and options for every item
        item["options"] = dict(variant["options"])
    order["status"] = "pending (item modified)"
    return order


@tool(WRITE, "Modify the payment method of a pending order. The agent needs to explain the modification detail and "
             "ask for explicit user confirmation (yes/no) to proceed.",
      order_id=ORDER_ID, payment_method_id=PAYMENT_ID)
def modify_pending_order_payment(s, order_id: str, payment_method_id: str):
    order = _order(s, order_id)
    if "pending" not in order["status"]:
        raise ToolError("Non-pending order cannot be modified")
    method = _method(s, order["user_id"], payment_method_id)
    history = order["payment_history"]
    if len(history) != 1 or history[0]["transaction_type"] != "payment":
        raise ToolError("There should be exactly one payment for a pending order")
    if history[0]["payment_method_id"] == payment_method_id:
        raise ToolError("The new payment method should be different from the current one")
    amount, old_id = history[0]["amount"], history[0]["payment_method_id"]
    if method["source"] == "gift_card" and method["balance"] < amount:
        raise ToolError("Insufficient gift card balance to pay for the order")
    order = s.db["orders"].mut(order_id)
    order["payment_history"].extend([
        {"transaction_type": "payment", "amount": amount, "payment_method_id": payment_method_id},
        {"transaction_type": "refund", "amount": amount, "payment_method_id": old_id}])
    if method["source"] == "gift_card":
        _credit(s, order["user_id"], payment_method_id, -amount)
    if _method(s, order["user_id"], old_id)["source"] == "gift_card":
        _credit(s, order["user_id"], old_id, amount)
    return order


@tool(WRITE, "Modify the default address of a user. The agent needs to explain the modification detail and ask for "
             "explicit user confirmation (yes/no) to proceed.", user_id="The user id, such as 'sara_doe_496'.",
      **ADDRESS)
def modify_user_address(s, user_id: str, address1: str, address2: str, city: str, state: str, country: str, zip: str):
    _user(s, user_id)
    user = s.db["users"].mut(user_id)
    user["address"] = _address(address1, address2, city, state, country, zip)
    return user


@tool(WRITE, "Return some items of a delivered order. The order status will be changed to 'return requested'. The "
             "agent needs to explain the return detail and ask for explicit user confirmation (yes/no) to proceed. "
             "The user will receive follow-up email for how and where to return the item.",
      order_id=ORDER_ID,
      item_ids="The item ids to be returned, each such as '1008292230'. There could be duplicate items in the list.",
      payment_method_id="The payment method id to receive the refund, such as 'gift_card_0000000' or "
                        "'credit_card_0000000': the original payment method or a gift card.")
def return_delivered_order_items(s, order_id: str, item_ids: list[str], payment_method_id: str):
    order = _order(s, order_id)
    if order["status"] != "delivered":
        raise ToolError("Non-delivered order cannot be returned")
    _user(s, order["user_id"])
    method = _method(s, order["user_id"], payment_method_id)
    if method["source"] != "gift_card" and payment_method_id != order["payment_history"][0]["payment_method_id"]:
        raise ToolError("Payment method should be the original payment method")
    _count_check(item_ids, order, "Some item not found")
    order = s.db["orders"].mut(order_id)
    order["status"] = "return requested"
    order["return_items"] = sorted(item_ids)
    order["return_payment_method_id"] = payment_method_id
    return order


@tool(GENERIC, "Transfer the user to a human agent, with a summary of the user's issue. Only transfer if the user "
               "explicitly asks for a human agent, or given the policy and the available tools, you cannot solve "
               "the user's issue.", summary="A summary of the user's issue.")
def transfer_to_human_agents(s, summary: str):
    return "Transfer successful"


TOOLS = collect(globals())
USER_TOOLS: dict = {}
FUNCTIONS = {name: t.fn for name, t in TOOLS.items()}


def violations(s, name: str, args: dict, seen_users: set) -> list[str]:
    """Mechanically checkable retail policy rules broken by this call (recorded, never blocked)."""
    out = []
    if TOOLS[name].kind != WRITE:
        return out
    uid = args.get("user_id")
    order = s.db["orders"].get(args.get("order_id")) if "order_id" in args else None
    if order is not None:
        uid = order["user_id"]
    if uid is not None and uid not in seen_users:
        out.append(f"{name}: user {uid} was not authenticated (find_user_id_by_email / _by_name_zip) before a write")
    if name == "modify_pending_order_items" and order is not None and order["status"] != "pending":
        out.append(f"{name}: items of {order['order_id']} were already modified once")
    return out


def identifies(name: str, args: dict, result) -> str | None:
    if name in ("find_user_id_by_email", "find_user_id_by_name_zip") and isinstance(result, str):
        return result
    return None
