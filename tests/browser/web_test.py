"""Browser tests of `memtrail web`: real Chromium (Debian's chromium + chromium-driver), driven
by selenium, against a server the caller started on a seeded store (tests/it/web_browser.rs).

    python web_test.py URL

The store holds the Claude fixture session 3f2a9c4e-… with its sub-agent, the hostile session
(fixtures/web/hostile.jsonl) and a generated session of 250 messages (`pagemarkerN` in message
N). Prints one line per check and `N passed, 0 failed`; exits 1 at the first failure.
"""

import json
import os
import subprocess
import sys
import time

from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.keys import Keys

HOSTILE = "9d0c7e21-hostile-4b6a-9f11-5c3e2d1a0b99"
DEMO = "3f2a9c4e-8b1d-4c6a-a7e5-0d9b2f6c1e83"
BIG = "5e1d2c3b-big0-4a5b-8c7d-0e1f2a3b4c5d"
PASSED = 0


def check(name, cond, detail=""):
    global PASSED
    if not cond:
        print(f"FAIL {name}: {detail}", flush=True)
        print(f"{PASSED} passed, 1 failed", flush=True)
        sys.exit(1)
    PASSED += 1
    print(f"ok {name}", flush=True)


def wait_for(cond, timeout=10.0):
    end = time.time() + timeout
    while time.time() < end:
        try:
            v = cond()
            if v:
                return v
        except Exception:  # the page is changing under us: try again
            pass
        time.sleep(0.05)
    return cond()


def driver():
    opts = Options()
    opts.binary_location = os.environ.get("MEMTRAIL_CHROMIUM", "/usr/bin/chromium")
    for a in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--window-size=1200,900", "--no-first-run", "--disable-extensions"]:
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(executable_path=os.environ.get("MEMTRAIL_CHROMEDRIVER", "/usr/bin/chromedriver"))
    return webdriver.Chrome(service=service, options=opts)


def not_pwned(d, where):
    """No hostile payload ran: window.__pwned unset, no dialog open, only this server's scripts,
    no element the hostile text describes."""
    check(f"{where}: window.__pwned is undefined",
          d.execute_script("return typeof window.__pwned") == "undefined")
    try:
        text = d.switch_to.alert.text
        check(f"{where}: no dialog", False, f"an alert says {text!r}")
    except NoAlertPresentException:
        check(f"{where}: no dialog", True)
    srcs = d.execute_script("return Array.from(document.scripts).map(s => s.getAttribute('src'))")
    check(f"{where}: only this server's scripts", srcs == ["/assets/htmx.min.js", "/assets/app.js"], srcs)
    n = d.execute_script("return document.querySelectorAll('main svg, main img, main iframe, a[href^=\"javascript\"], [onload], [onerror]').length")
    check(f"{where}: no element from transcript text", n == 0, n)


def press(d, key):
    """A key pressed wherever the focus is (as a person would)."""
    ActionChains(d).send_keys(key).perform()


def csp_violations(d):
    return [e["message"] for e in d.get_log("browser") if "Content Security Policy" in e["message"]]


def main():
    base = sys.argv[1].rstrip("/")
    d = driver()
    try:
        run(d, base)
    finally:
        d.quit()
    print(f"{PASSED} passed, 0 failed", flush=True)


def run(d, base):
    # --- search as you type: no submit, htmx swaps the results and the address follows
    d.get(base + "/")
    q = d.find_element(By.ID, "q")
    check("search: the query box has the focus", d.switch_to.active_element == q)
    q.send_keys("hostilemarker")
    count = wait_for(lambda: d.find_element(By.CSS_SELECTOR, "#results .count").text)
    check("search as you type: 2 hits", count == "2 hits", count)
    check("search: the address carries the query",
          wait_for(lambda: "q=hostilemarker" in d.current_url), d.current_url)
    marks = [m.text for m in d.find_elements(By.CSS_SELECTOR, "#results mark")]
    check("search: the matched word highlighted in each snippet", marks == ["hostilemarker", "hostilemarker"], marks)
    not_pwned(d, "search")

    # --- a filter narrows the hits (htmx on change)
    from selenium.webdriver.support.ui import Select
    Select(d.find_element(By.NAME, "role")).select_by_value("assistant")
    count = wait_for(lambda: d.find_element(By.CSS_SELECTOR, "#results .count").text == "1 hit" and "1 hit")
    check("search: role filter gives 1 hit", count == "1 hit", count)

    # --- back to the search before the filter: the whole page again, with its results
    d.back()
    count = wait_for(lambda: d.find_element(By.CSS_SELECTOR, "#results .count").text == "2 hits" and "2 hits")
    check("back: the earlier search, whole", count == "2 hits" and len(d.find_elements(By.ID, "q")) == 1
          and len(d.find_elements(By.CSS_SELECTOR, "header.top")) == 1, d.current_url)
    Select(d.find_element(By.NAME, "role")).select_by_value("assistant")
    count = wait_for(lambda: d.find_element(By.CSS_SELECTOR, "#results .count").text == "1 hit" and "1 hit")
    check("search: role filter again", count == "1 hit", count)

    # --- a date half typed (`7` on the way to `7d`): said in place of the hits, the page stays
    # one page (a 400 error page was swapped into the results, a second header inside it)
    since = d.find_element(By.NAME, "since")
    since.send_keys("7")
    refused = wait_for(lambda: "".join(e.text for e in d.find_elements(By.CSS_SELECTOR, "#results .refused")))
    check("since half typed: why, in place of hits", refused.startswith("Nothing searched: cannot read the date `7`"), refused)
    check("since half typed: one page", len(d.find_elements(By.CSS_SELECTOR, "header.top")) == 1,
          len(d.find_elements(By.CSS_SELECTOR, "header.top")))
    since.send_keys(Keys.BACK_SPACE)
    count = wait_for(lambda: d.find_element(By.CSS_SELECTOR, "#results .count").text == "1 hit" and "1 hit")
    check("since cleared: the hits again", count == "1 hit", count)

    # --- keyboard: Escape leaves the box, j goes to the hit, Enter opens it at its message
    d.find_element(By.ID, "q").click()
    press(d, Keys.ESCAPE)
    check("keyboard: Escape leaves the query box", d.switch_to.active_element.tag_name == "body")
    press(d, "/")
    check("keyboard: / goes back to the query box", d.switch_to.active_element.get_attribute("id") == "q")
    press(d, Keys.ESCAPE)
    press(d, "j")
    active = d.switch_to.active_element
    check("keyboard: j focuses the first hit", active.get_attribute("class") == "hit-link",
          active.get_attribute("outerHTML")[:80])
    press(d, Keys.ENTER)
    wait_for(lambda: "/session?" in d.current_url)
    check("hit: opens the session at message 1", "at=1" in d.current_url and d.current_url.endswith("#m1"), d.current_url)
    at = d.find_element(By.ID, "m1")
    check("hit: the message is marked and focused",
          at.get_attribute("data-at") is not None and d.switch_to.active_element == at)
    not_pwned(d, "hostile session")
    # Open every tool call and fold: the hostile output is shown as text, still inert.
    for s in d.find_elements(By.CSS_SELECTOR, "details > summary"):
        s.click()
    out = d.find_element(By.CSS_SELECTOR, "pre.output").text
    check("hostile output shown as text",
          out.startswith("<script>window.__pwned=8</script></pre></details><iframe"), out[:80])
    not_pwned(d, "hostile session, opened")
    press(d, "j")
    check("keyboard: j on a session moves to the next message",
          d.switch_to.active_element.get_attribute("id") == "m2", d.switch_to.active_element.get_attribute("id"))

    # --- typing on while the answer to an earlier prefix of the query is on its way: the
    # results shown are those of the query in the box, never a stale one. Each request is held
    # 1.5 s by the browser (DevTools' network emulation), so the first is still out when the
    # second and third are asked (250 ms after each burst of typing): htmx's default queues the
    # second and drops the third (`pagemarker12` shown under `pagemarker123`); the form's
    # `hx-sync="this:replace"` aborts the earlier requests instead.
    d.get(base + "/")
    q = d.find_element(By.ID, "q")
    d.execute_cdp_cmd("Network.enable", {})
    d.execute_cdp_cmd("Network.emulateNetworkConditions",
                      {"offline": False, "latency": 1500, "downloadThroughput": -1, "uploadThroughput": -1})
    try:
        for part in ["pagemarker1", "2", "3"]:
            q.send_keys(part)
            time.sleep(0.45)
        shown = lambda: [m.text for m in d.find_elements(By.CSS_SELECTOR, "#results mark")]
        wait_for(lambda: shown() == ["pagemarker123"], timeout=12)
        time.sleep(2.0)  # nothing older arrives after it
        check("typing on: the results are the query's in the box", shown() == ["pagemarker123"], shown())
        check("typing on: the address is the query's in the box", "q=pagemarker123" in d.current_url, d.current_url)
    finally:
        d.execute_cdp_cmd("Network.emulateNetworkConditions",
                          {"offline": False, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1})

    # --- lazy parts: the events timeline loads when opened (htmx under the CSP)
    d.get(f"{base}/session?id={DEMO}&agent=claude")
    d.find_element(By.CSS_SELECTOR, "#events > summary").click()
    ev = wait_for(lambda: d.find_elements(By.CSS_SELECTOR, "#events-body ol.events li"))
    check("events timeline loads on open", ev and len(ev) > 0, ev)
    d.find_element(By.CSS_SELECTOR, "#snapshot > summary").click()
    snap = wait_for(lambda: d.find_elements(By.CSS_SELECTOR, "#snapshot-body pre.snapshot, #snapshot-body p.empty"))
    check("snapshot loads on open", bool(snap))
    check("no CSP violation on our own pages", csp_violations(d) == [], csp_violations(d))

    # --- sessions: the sub-agent under its parent; paging of a 250-message session
    d.get(base + "/sessions")
    rows = d.find_elements(By.CSS_SELECTOR, "table.sessions tbody tr")
    titles = [r.get_attribute("class") for r in rows]
    check("sessions: 4 rows, one of them a sub-agent", len(rows) == 4 and titles.count("child") == 1, titles)
    links = [a.get_attribute("href") for a in d.find_elements(By.CSS_SELECTOR, "table.sessions a")]
    parent = next(i for i, h in enumerate(links) if h.endswith(f"id={DEMO}&agent=claude"))
    check("sessions: the sub-agent right under its parent", "agent-a7f3c21" in links[parent + 1], links)
    not_pwned(d, "sessions")

    d.get(base + "/search?q=pagemarker217")
    d.find_element(By.CSS_SELECTOR, "a.hit-link").click()
    wait_for(lambda: "at=217" in d.current_url)
    pager = d.find_element(By.CSS_SELECTOR, "nav.pager span").text
    check("paging: the hit's page holds messages #200–#249", pager == "messages #200–#249 of 250", pager)
    check("paging: message 217 shown",
          "pagemarker217" in d.find_element(By.ID, "m217").text)
    d.find_element(By.CSS_SELECTOR, "nav.pager a[rel=prev]").click()
    pager = wait_for(lambda: d.find_element(By.CSS_SELECTOR, "nav.pager span").text)
    check("paging: Earlier gives messages #100–#199", pager == "messages #100–#199 of 250", pager)
    check("paging: 100 messages on the page", len(d.find_elements(By.CSS_SELECTOR, "article.msg")) == 100)

    # --- live: the session's last page shows a turn the Stop hook ingests meanwhile
    d.get(f"{base}/session?id={BIG}&agent=claude&offset=200")
    check("live: the last page follows the session",
          d.find_element(By.CSS_SELECTOR, "section.messages").get_attribute("data-live") is not None)
    big = os.environ["MEMTRAIL_WEB_TEST_BIG"]
    with open(big, "a") as f:
        for i, (kind, text) in enumerate([("user", "live question livemarker250"),
                                          ("assistant", "live answer <script>window.__pwned=10</script> livemarker251")]):
            n = 250 + i
            msg = ({"role": "user", "content": text} if kind == "user" else
                   {"model": "claude-opus-4-6", "id": f"msg_live_{n}", "type": "message", "role": "assistant",
                    "content": [{"type": "text", "text": text}], "stop_reason": None, "stop_sequence": None,
                    "usage": {"input_tokens": 3, "output_tokens": 1}})
            f.write(json.dumps({"parentUuid": f"22222222-0000-4000-8000-{n - 1:012}", "isSidechain": False,
                                "userType": "external", "cwd": "/home/user/big", "sessionId": BIG,
                                "version": "2.1.49", "gitBranch": "main", "type": kind, "message": msg,
                                "uuid": f"22222222-0000-4000-8000-{n:012}",
                                "timestamp": f"2026-03-04T11:00:0{i}.000Z"}) + "\n")
    payload = json.dumps({"session_id": BIG, "transcript_path": big, "cwd": "/home/user/big",
                          "permission_mode": "default", "hook_event_name": "Stop", "stop_hook_active": False})
    hook = subprocess.run([os.environ["MEMTRAIL_WEB_TEST_BIN"], "--db", os.environ["MEMTRAIL_WEB_TEST_DB"],
                           "hook", "claude"], input=payload, text=True, capture_output=True, timeout=60)
    check("live: the hook ran", hook.returncode == 0, hook.stderr)
    new = wait_for(lambda: d.find_elements(By.ID, "m251"), timeout=15)
    check("live: the new turn appears without reload", bool(new) and "livemarker251" in new[0].text,
          [e.text for e in d.find_elements(By.CSS_SELECTOR, "article.msg")][-2:])
    check("live: each new message once", len(d.find_elements(By.ID, "m250")) == 1
          and len(d.find_elements(By.CSS_SELECTOR, "article.msg")) == 52)
    not_pwned(d, "live session")

    # --- delete, with its confirmation; Cancel first
    d.get(f"{base}/session?id={HOSTILE}&agent=claude")
    d.find_element(By.LINK_TEXT, "Delete…").click()
    check("delete: a confirmation page", d.find_element(By.TAG_NAME, "h1").text == "Delete this session?")
    d.find_element(By.LINK_TEXT, "Cancel").click()
    check("delete: Cancel keeps the session", "/session?" in d.current_url and
          d.find_element(By.TAG_NAME, "h1").text.startswith("Render this:"))
    d.find_element(By.LINK_TEXT, "Delete…").click()
    d.find_element(By.CSS_SELECTOR, "form#delete button[type=submit]").click()
    wait_for(lambda: "/sessions?deleted=" in d.current_url)
    note = d.find_element(By.CSS_SELECTOR, "p.note").text
    check("delete: the list says it is gone", note == f"Deleted session {HOSTILE}.", note)
    rows = [a.get_attribute("href") for a in d.find_elements(By.CSS_SELECTOR, "table.sessions a")]
    check("delete: not in the list any more", len(rows) == 3 and not any(HOSTILE in h for h in rows), rows)
    d.get(f"{base}/session?id={HOSTILE}&agent=claude")
    check("delete: its page is a 404", d.find_element(By.TAG_NAME, "h1").text == "404 Not Found")
    d.get(base + "/search?q=hostilemarker")
    check("delete: no hit left", d.find_element(By.CSS_SELECTOR, "#results .empty").text.startswith("No matches"))

    # --- status page
    d.get(base + "/status")
    check("status: renders", d.find_element(By.TAG_NAME, "h1").text == "Status")
    # Booleans read as words, not JSON: the sandbox syncs nowhere.
    terms = {dt.text: dd.text for dl in d.find_elements(By.CSS_SELECTOR, "dl.summary")
             for dt, dd in zip(dl.find_elements(By.TAG_NAME, "dt"), dl.find_elements(By.TAG_NAME, "dd"))}
    check("status: sync not configured, in words", terms.get("Configured") == "no", terms)
    check("status: healthy in words", d.find_element(By.CSS_SELECTOR, "main p strong").text in ("yes", "no"))
    # Agents not on this machine are named once, not given rows of "missing".
    agent_rows = [r[0] for r in [[c.text for c in tr.find_elements(By.TAG_NAME, "td")]
                                 for tr in d.find_elements(By.CSS_SELECTOR, "table.sessions tbody tr")] if r]
    elsewhere = d.find_element(By.ID, "elsewhere").text
    absent = elsewhere.removeprefix("Not on this machine: ").rstrip(".").split(", ")
    check("status: absent agents in one line", elsewhere.startswith("Not on this machine: ") and "goose" in absent, elsewhere)
    check("status: no row for an absent agent", not set(absent) & set(agent_rows) and "claude" in agent_rows, agent_rows)

    analytics(d, base)
    modes(d, base)
    check("no CSP violation at the end", csp_violations(d) == [], csp_violations(d))


def memtrail(*args):
    """`memtrail --db DB ARGS` in the test's sandbox (its HOME); its output."""
    r = subprocess.run([os.environ["MEMTRAIL_WEB_TEST_BIN"], "--db", os.environ["MEMTRAIL_WEB_TEST_DB"], *args],
                       text=True, capture_output=True, timeout=120)
    check(f"memtrail {' '.join(args)}", r.returncode == 0, r.stderr)
    return r.stdout


def rows(d, table):
    return [[c.text for c in r.find_elements(By.TAG_NAME, "td")]
            for r in d.find_elements(By.CSS_SELECTOR, f"table#{table} tbody tr")]


def analytics(d, base):
    """The analytics page of the store as the checks above left it, plus the session of
    fixtures/web/hostile-edit.jsonl (imported now), counted by hand: the demo session and its
    sub-agent on 2026-03-03 (3 + 3 messages, one 5-minute slot of /home/user/demo; a Task and a
    Grep call), the generated session on 2026-03-04 (250 messages in 10:00–10:04:09 and the two
    of the live turn at 11:00, two slots of /home/user/big; every odd message and the live
    answer by claude-opus-4-6: 126), the hostile session deleted, and the new one on 2026-03-05
    (6 messages in two slots; Edit 2, Write 1, Bash 1 failed; the <script> path edited twice,
    the <img> path written once)."""
    edit = "7b3e9f10-edit-4c2d-8e6f-1a2b3c4d5e6f"
    folder = os.path.join(os.environ["HOME"], ".claude/projects/-hostile-edit")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(os.environ["MEMTRAIL_WEB_TEST_FIXTURES"], "hostile-edit.jsonl")) as f:
        text = f.read()
    with open(os.path.join(folder, f"{edit}.jsonl"), "w") as f:
        f.write(text)
    said = memtrail("import", "--agent", "claude")
    check("analytics: the hostile-edit session imported", "1 with new content" in said, said)

    d.get(base + "/analytics?until=2026-03-05&days=7")
    check("analytics: renders", d.find_element(By.TAG_NAME, "h1").text == "Analytics")
    check("analytics: the nav marks it",
          d.find_element(By.CSS_SELECTOR, "nav a[aria-current=page]").text == "Analytics")
    check("analytics: totals", rows(d, "totals") == [["claude", "3", "264", "3"]], rows(d, "totals"))
    check("analytics: active time per project", rows(d, "projects") == [
        ['/home/user/"><svg onload=window.__pwned=11>', "", "10 min"],
        ["/home/user/big", "", "10 min"],
        ["/home/user/demo", "", "5 min"]], rows(d, "projects"))
    check("analytics: top tools and their error rates", rows(d, "tools") == [
        ["Edit", "", "2", "0", "0.0 %"], ["Bash", "", "1", "1", "100.0 %"], ["Grep", "", "1", "0", "0.0 %"],
        ["Task", "", "1", "0", "0.0 %"], ["Write", "", "1", "0", "0.0 %"]], rows(d, "tools"))
    check("analytics: files most edited", rows(d, "files") == [
        ["/home/user/proj/<script>window.__pwned=12</script>.rs", "", "2"],
        ['/home/user/proj/"><img src=x onerror=window.__pwned=13>.md', "", "1"]], rows(d, "files"))
    titles = d.execute_script(
        "return Array.from(document.querySelectorAll('#messages-per-day rect title')).map(t => t.textContent)")
    check("analytics: messages per day per agent",
          titles == ["2026-03-03 · claude: 6 messages", "2026-03-04 · claude: 252 messages",
                     "2026-03-05 · claude: 6 messages"], titles)
    titles = d.execute_script(
        "return Array.from(document.querySelectorAll('#sessions-per-day rect title')).map(t => t.textContent)")
    check("analytics: sessions per day per agent",
          titles == ["2026-03-03 · claude: 1 session", "2026-03-04 · claude: 1 session",
                     "2026-03-05 · claude: 1 session"], titles)
    models = d.execute_script(
        "return Array.from(document.querySelectorAll('#models-per-day rect title')).map(t => t.textContent)"
        ".filter(t => t.startsWith('2026-03-04'))")
    check("analytics: messages per model on 2026-03-04",
          sorted(models) == ["2026-03-04 · (no model: user messages, tool results): 126 messages",
                             "2026-03-04 · claude-opus-4-6: 126 messages"], models)
    cells = d.execute_script(
        "return Array.from(document.querySelectorAll('#heatmap rect')).filter(r => r.dataset.n !== '0')"
        ".map(r => [r.dataset.day, r.dataset.n, r.getAttribute('class')])")
    check("analytics: the heatmap's busy days and their shades",
          cells == [["2026-03-03", "6", "h1"], ["2026-03-04", "252", "h4"], ["2026-03-05", "6", "h1"]], cells)
    n = d.execute_script("return document.querySelectorAll('#heatmap rect').length")
    # 52 weeks and this week's Sunday to Thursday (2026-03-05).
    check("analytics: a cell per day of the year", n == 52 * 7 + 5, n)
    check("analytics: says tokens are not stored",
          d.find_element(By.ID, "no-tokens").text.startswith("Tokens per model are not shown"))
    # The hostile labels ran nothing: no dialog, no marker, only the page's own scripts and SVG.
    check("analytics: window.__pwned is undefined", d.execute_script("return typeof window.__pwned") == "undefined")
    try:
        text = d.switch_to.alert.text
        check("analytics: no dialog", False, f"an alert says {text!r}")
    except NoAlertPresentException:
        check("analytics: no dialog", True)
    srcs = d.execute_script("return Array.from(document.scripts).map(s => s.getAttribute('src'))")
    check("analytics: only this server's scripts", srcs == ["/assets/htmx.min.js", "/assets/app.js"], srcs)
    bad = d.execute_script(
        "return document.querySelectorAll('main svg:not(.chart), main svg svg, main img, main iframe, "
        "main script, [onload], [onerror]').length")
    check("analytics: no element from store text", bad == 0, bad)
    check("analytics: no CSP violation", csp_violations(d) == [], csp_violations(d))


def modes(d, base):
    """The search mode selector: disabled with the reason while no model is set up; with the
    tiny 4-dimension test model installed and the store embedded, keyword / by meaning /
    hybrid, and a query that shares no word with the prompt it means finds it by meaning."""
    d.get(base + "/search?q=database+server+rejects+clients")
    sel = d.find_element(By.ID, "mode")
    check("modes: disabled without a model", not sel.is_enabled())
    why = d.find_element(By.ID, "mode-why").text
    check("modes: the reason and what to run", why.startswith("Search by meaning needs a model: memtrail models install"), why)
    code = [c.text for c in d.find_elements(By.CSS_SELECTOR, "#mode-why code")]
    check("modes: the command as code, no backquotes shown", code[:1] == ["memtrail models install"] and "`" not in why, code)
    check("modes: keyword finds nothing", d.find_element(By.CSS_SELECTOR, "#results .empty").text.startswith("No matches"))

    import shutil
    dest = os.path.join(os.environ["HOME"], ".local/share/memtrail/models/minilm-l6-static")
    shutil.copytree(os.environ["MEMTRAIL_WEB_TEST_MODEL"], dest)
    d.get(base + "/search?q=database+server+rejects+clients")
    why = d.find_element(By.ID, "mode-why").text
    check("modes: model installed, no vectors yet", why == "The store holds no vectors of minilm-l6-static@1/4 yet: run memtrail embed.", why)
    memtrail("embed")

    d.get(base + "/search?q=database+server+rejects+clients")
    sel = d.find_element(By.ID, "mode")
    opts = [o.get_attribute("value") for o in sel.find_elements(By.TAG_NAME, "option")]
    check("modes: keyword, semantic, hybrid", sel.is_enabled() and opts == ["keyword", "semantic", "hybrid"], opts)
    check("modes: keyword by default", sel.get_attribute("value") == "keyword")
    from selenium.webdriver.support.ui import Select
    Select(sel).select_by_value("semantic")
    ranked = wait_for(lambda: d.find_element(By.ID, "ranked").text)
    check("modes: ranked by meaning", ranked == "Ranked by meaning.", ranked)
    check("modes: the address carries the mode", wait_for(lambda: "mode=semantic" in d.current_url), d.current_url)
    first = d.find_element(By.CSS_SELECTOR, "#results li.hit .snippet").text
    check("modes: by meaning, the prompt it means first",
          first.startswith("Postgres keeps refusing connections"), first)
    Select(d.find_element(By.ID, "mode")).select_by_value("hybrid")
    ranked = wait_for(lambda: d.find_element(By.ID, "ranked").text == "Ranked by words and meaning (hybrid)." and "ok")
    check("modes: hybrid", ranked == "ok", d.find_element(By.ID, "ranked").text)
    first = d.find_element(By.CSS_SELECTOR, "#results li.hit .snippet").text
    check("modes: hybrid, the same prompt first", first.startswith("Postgres keeps refusing connections"), first)
    not_pwned(d, "search by meaning")


if __name__ == "__main__":
    main()
