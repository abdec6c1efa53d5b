// The page of `arrivalbench human`: shows the desk's state, sends "run" and "submit".
// Markdown arrives rendered by the server with raw HTML escaped; everything else is set as text.
"use strict";
(function () {
  const token = new URLSearchParams(location.search).get("token") || "";
  const $ = (id) => document.getElementById(id);
  let state = null;
  let shownTask = null;

  async function call(method, path, body) {
    const response = await fetch(path, {
      method,
      headers: { "X-Token": token, "Content-Type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    let data = {};
    try { data = await response.json(); } catch (e) { data = { error: response.statusText }; }
    return { ok: response.ok, status: response.status, data };
  }

  function setBusy(busy) {
    $("run").disabled = busy;
    $("submit").disabled = busy;
    $("script").readOnly = busy;
    $("busy").hidden = !busy;
  }

  function verdictBadge(verdict) {
    const badge = document.createElement("span");
    badge.className = "verdict " + (verdict || "");
    badge.textContent = verdict || "…";
    return badge;
  }

  function render(s) {
    state = s;
    $("instructions").hidden = !s.instructions_html;
    $("instructions-body").innerHTML = s.instructions_html;
    if (s.status === "finished") {
      $("work").hidden = true;
      $("done").hidden = false;
      $("where").textContent = "participant " + s.participant;
      $("counter").textContent = "";
      const list = $("done-list");
      list.textContent = "";
      for (const f of s.finished) {
        const item = document.createElement("li");
        item.textContent = f.task + ": " + f.verdict + " after " + f.turns + " test run(s)";
        list.appendChild(item);
      }
      return;
    }
    if (!s.task) { $("where").textContent = "starting…"; return; }
    $("work").hidden = false;
    $("done").hidden = true;
    $("where").textContent = "participant " + s.participant + " · task " + s.task_number +
      " of " + s.task_count + ": " + s.task;
    const used = s.history.length;
    $("counter").textContent = "test runs used: " + used + " of " + s.turns;
    $("system").innerHTML = s.system_html;
    $("user").innerHTML = s.user_html;
    $("raw").textContent = "system:\n" + s.system + "\n\nuser:\n" + s.user;
    if (shownTask !== s.task) {
      shownTask = s.task;
      const last = s.history.length ? s.history[s.history.length - 1].script : "";
      $("script").value = last;
      $("message").textContent = "";
      const previous = s.finished[s.finished.length - 1];
      if (previous) {
        $("message").textContent = "Task " + previous.task + " is done (" + previous.verdict +
          "). This is the next task.";
      }
    }
    const history = $("history");
    history.textContent = "";
    for (const h of s.history.slice().reverse()) {
      const turn = document.createElement("div");
      turn.className = "turn";
      turn.dataset.turn = h.turn;
      const title = document.createElement("h2");
      title.textContent = "Test run " + h.turn + " ";
      title.appendChild(verdictBadge(h.verdict));
      turn.appendChild(title);
      if (h.feedback) {
        // the loop's message verbatim, as the model reads it (line by line, not as Markdown)
        const body = document.createElement("pre");
        body.className = "feedback";
        body.textContent = h.feedback;
        turn.appendChild(body);
      } else if (h.verdict === "PASS") {
        const body = document.createElement("p");
        body.textContent = "The test passed.";
        turn.appendChild(body);
      }
      history.appendChild(turn);
    }
    setBusy(s.status !== "waiting");
    if (s.status !== "waiting") { setTimeout(refresh, 400); }
  }

  async function refresh() {
    const result = await call("GET", "/api/state");
    if (!result.ok) { $("message").textContent = result.data.error || "the server refused"; return; }
    render(result.data);
  }

  async function act(kind) {
    if (!state || state.status !== "waiting") { return; }
    setBusy(true);
    const result = await call("POST", "/api/action", {
      kind, script: $("script").value, task: state.task, turn: state.turn,
    });
    if (result.ok) {
      render(result.data);
    } else if (result.status === 409 && result.data.state) {
      render(result.data.state);
    } else {
      $("message").textContent = result.data.error || "the server refused";
      setBusy(false);
    }
  }

  document.addEventListener("DOMContentLoaded", function () {
    $("run").addEventListener("click", () => act("run"));
    $("submit").addEventListener("click", () => act("submit"));
    $("script").addEventListener("keydown", function (event) {
      if (event.key === "Tab" && !event.shiftKey) {
        event.preventDefault();
        const area = event.target;
        const start = area.selectionStart;
        area.setRangeText("    ", start, area.selectionEnd, "end");
      }
    });
    refresh();
  });
})();
