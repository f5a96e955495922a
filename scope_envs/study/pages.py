"""The participant's and the admin's pages: Jinja2 templates, rendered on the server with autoescaping on,
so whatever a person types is shown as text. A message the game did not accept is shown with a note in the
person's words (``games.participant_note``), never the engine's error. The only script is the chat's
(``SCRIPTS["chat.js"]``, served as ``/static/chat.js``): it shows the person's message and a typing indicator
while the form is sent. No page holds an inline script, so the content security policy forbids them all."""

from __future__ import annotations

import jinja2

from scope_envs.study.games import SPECS, participant_note

BASE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{ title }}</title>
<style>
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;background:#f4f5f7;margin:0;color:#1d2330}
main{max-width:760px;margin:32px auto;background:#fff;border-radius:10px;padding:28px 32px;
box-shadow:0 1px 4px rgba(0,0,0,.08)}
h1{font-size:1.35rem;margin-top:0} .muted{color:#667085;font-size:.9rem}
.card{background:#f0f6ff;border-left:4px solid #3b6fd8;padding:14px 18px;border-radius:6px;margin:16px 0}
button,.button{background:#3b6fd8;color:#fff;border:0;border-radius:6px;padding:10px 20px;font-size:1rem;
cursor:pointer;text-decoration:none;display:inline-block} button.secondary{background:#98a2b3}
.chat{display:flex;flex-direction:column;gap:10px;margin:18px 0;max-height:55vh;overflow-y:auto;padding:4px}
.msg{max-width:78%;padding:10px 14px;border-radius:14px;line-height:1.4;white-space:pre-wrap;word-wrap:break-word}
.agent{background:#eef0f4;align-self:flex-start;border-bottom-left-radius:4px}
.user{background:#3b6fd8;color:#fff;align-self:flex-end;border-bottom-right-radius:4px}
.rejected{opacity:.55} .note{font-size:.85rem;color:#b54708;align-self:flex-end}
.typing{align-self:flex-start;color:#667085;font-style:italic}
textarea{width:100%;box-sizing:border-box;font-size:1rem;padding:10px;border-radius:6px;border:1px solid #d0d5dd}
.notice{background:#fff4e5;border:1px solid #f7c98b;padding:10px 14px;border-radius:6px;margin:10px 0}
table{border-collapse:collapse;width:100%} td,th{border-bottom:1px solid #eaecf0;padding:6px 8px;text-align:left}
.likert{margin:14px 0} .likert label{margin-right:12px;white-space:nowrap}
.code{font-size:1.6rem;font-weight:700;letter-spacing:.08em;background:#ecfdf3;padding:12px 18px;border-radius:8px;
display:inline-block}
</style></head><body><main>
{% block body %}{% endblock %}
</main></body></html>"""

TEMPLATES = {
    "base.html": BASE,
    "message.html": """{% extends "base.html" %}{% block body %}<h1>{{ heading }}</h1><p>{{ text }}</p>
{% if form %}<form method="get" action="/"><label>Your Prolific ID
<input name="PROLIFIC_PID" maxlength="64" required></label> <button>Start</button></form>{% endif %}
{% endblock %}""",
    "consent.html": """{% extends "base.html" %}{% block body %}<h1>{{ title }}</h1>
<p>You are invited to take part in a research study about conversations with an automated chat partner.
You will read a short description of your role, chat for a few minutes, then answer a few questions.
It takes about 10 minutes.</p>
{% if notice %}<div class="notice">{{ notice }}</div>{% endif %}
<p>We record the messages you write and your answers, linked to your Prolific ID only. Please do not write
personal information. You can stop at any time by closing this page. Messages are limited to
{{ max_chars }} characters.</p>
<form method="post" action="/consent"><button name="agree" value="yes">I agree to take part</button>
<button class="secondary" name="agree" value="no">I do not agree</button></form>{% endblock %}""",
    "role.html": """{% extends "base.html" %}{% block body %}<h1>Your role</h1>
<div class="card">{% for line in card %}<p>{{ line }}</p>{% endfor %}</div>
<form method="post" action="/role"><button>Start the conversation</button></form>{% endblock %}""",
    "chat.html": """{% extends "base.html" %}{% block body %}<h1>Conversation</h1>
<p class="muted">{{ hint }}</p>
<div class="chat" id="chat">
{% for m in messages %}<div class="msg {{ m.role }}{% if m.error %} rejected{% endif %}">{{ m.text }}</div>
{% if m.error %}<div class="note">Not sent to your partner. {{ m.error | note }}</div>{% endif %}{% endfor %}
{% if owed %}<div class="typing">Your partner is typing…</div>{% endif %}
</div>
{% if notice %}<div class="notice" id="notice">{{ notice }}</div>{% endif %}
{% if your_turn %}
<form method="post" action="/chat" id="send">
<textarea name="text" id="text" rows="3" maxlength="{{ max_chars }}" required autofocus
placeholder="Type your message"></textarea>
{% if final %}<p class="notice">This is your last message: please say how much of your $2 bonus you will donate
(for example “I’ll give $0.50”) and choose the amount here:
<select name="amount" id="amount" required><option value="">choose…</option>
{% for a in amounts %}<option value="{{ a }}">${{ a }}</option>{% endfor %}</select></p>{% endif %}
<p><button id="sendbtn">Send</button>
{% if person_ends %}<button class="secondary" id="endbtn" name="end" value="yes" formnovalidate>End the chat</button>
{% endif %}<span class="muted">{{ max_chars }} characters at most</span></p>
</form>
<script src="/static/chat.js"></script>
{% elif owed %}<p><a class="button" href="/chat">Show the reply</a></p>{% endif %}
{% endblock %}""",
    "survey.html": """{% extends "base.html" %}{% block body %}<h1>A few questions</h1>
<form method="post" action="/survey">
{% if outcome_item == "solved" %}<p>Was your issue solved?<br>
<label><input type="radio" name="solved" value="1" required> Yes</label>
<label><input type="radio" name="solved" value="0" required> No</label></p>
{% else %}<p><label>How much of your $2 bonus will you donate to Save the Children? (between $0 and $2)<br>
$ <input name="donation" type="number" min="0" max="2" step="0.01" required></label></p>{% endif %}
{% for item in items %}<div class="likert"><p>{{ item.text }}</p>
{% for v in range(1, 8) %}<label><input type="radio" name="{{ item.id }}" value="{{ v }}" required> {{ v }}</label>
{% endfor %}<div class="muted">1 = strongly disagree, 7 = strongly agree</div></div>{% endfor %}
{% if notice %}<div class="notice">{{ notice }}</div>{% endif %}
<button>Submit</button></form>{% endblock %}""",
    "done.html": """{% extends "base.html" %}{% block body %}<h1>Thank you!</h1>
<p>Your completion code:</p><p class="code" id="code">{{ code }}</p>
<p><a class="button" href="{{ url }}">Return to Prolific</a></p>{% endblock %}""",
    "admin.html": """{% extends "base.html" %}{% block body %}<h1>{{ title }}: progress</h1>
<p class="muted">{{ per_condition }} people per condition; baseline {{ baseline }}; blocked randomisation.</p>
<table><tr><th>condition</th><th>assigned</th><th>in progress</th><th>complete</th><th>left</th><th>declined</th></tr>
{% for name, t in progress.items() %}<tr><td>{{ name }}</td><td>{{ t.assigned }}</td><td>{{ t.chatting }}</td>
<td>{{ t.complete }} / {{ per_condition }}</td><td>{{ t.left }}</td><td>{{ t.declined }}</td></tr>{% endfor %}
</table>
<p>Export: <a href="/admin/export.csv?token={{ token | urlencode }}">sessions.csv</a> ·
<a href="/admin/export.jsonl?token={{ token | urlencode }}">transcripts.jsonl</a></p>
{% endblock %}""",
}

# the pages' scripts, served by the app at /static/NAME: as files of the server, never inline, so the content
# security policy can refuse every inline script (one injected into a page would not run)
SCRIPTS = {
    "chat.js": """document.getElementById("send").addEventListener("submit", function () {
  var chat = document.getElementById("chat"), t = document.getElementById("text");
  var mine = document.createElement("div"); mine.className = "msg user"; mine.textContent = t.value;
  if (t.value.trim()) chat.appendChild(mine);
  var dots = document.createElement("div"); dots.className = "typing"; dots.id = "typing";
  dots.textContent = "Your partner is typing\u2026"; chat.appendChild(dots);
  chat.scrollTop = chat.scrollHeight; document.getElementById("sendbtn").disabled = true;
});
var c = document.getElementById("chat"); c.scrollTop = c.scrollHeight;
""",
}

environment = jinja2.Environment(loader=jinja2.DictLoader(TEMPLATES), autoescape=True)
environment.filters["note"] = participant_note  # a refused message's note in the person's words, not the engine's


def render(name: str, **context) -> str:
    """Template ``name`` filled in; a page of a study's ``game`` also reads that game's study spec
    (``scope_envs.study.games``): ``person_ends`` (the person can end the chat) and ``outcome_item``."""
    if context.get("game") in SPECS:
        study_spec = SPECS[context["game"]]
        context = {"person_ends": hasattr(study_spec, "stop_text"), "outcome_item": study_spec.outcome_item, **context}
    return environment.get_template(name).render(**context)
