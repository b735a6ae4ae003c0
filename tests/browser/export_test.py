"""Browser test of `memtrail export --format html`: real Chromium (Debian's chromium +
chromium-driver), driven by selenium, opening exported pages from disk (file://), as someone
who was sent one would (tests/it/export_cli.rs, `exported_html_in_a_real_browser`).

    python export_test.py PAGE.html...

Each page: no script ran or exists (the hostile fixture's payloads set window.__pwned), no
dialog, no element made from transcript text, the inline style sheet applied (the CSP allows it
by its hash) and no Content-Security-Policy violation logged, tool calls open without script.
Prints one line per check and `N passed, 0 failed`; exits 1 at the first failure.
"""

import pathlib
import sys

from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.common.by import By

# The web page's browser test's helpers: the same Chromium set-up and check lines.
import web_test
from web_test import check, driver


def main():
    d = driver()
    try:
        for page in sys.argv[1:]:
            name = pathlib.Path(page).name
            d.get(pathlib.Path(page).resolve().as_uri())
            check(f"{name}: loaded", d.find_element(By.CSS_SELECTOR, "main h1") is not None)
            check(f"{name}: window.__pwned is undefined",
                  d.execute_script("return typeof window.__pwned") == "undefined")
            try:
                text = d.switch_to.alert.text
                check(f"{name}: no dialog", False, f"an alert says {text!r}")
            except NoAlertPresentException:
                check(f"{name}: no dialog", True)
            n = d.execute_script("return document.scripts.length")
            check(f"{name}: no script element", n == 0, n)
            n = d.execute_script(
                "return document.querySelectorAll('svg, img, iframe, object, embed, textarea, form, "
                "a[href^=\"javascript\"], [onload], [onerror], link, base').length")
            check(f"{name}: no element from transcript text", n == 0, n)
            hrefs = d.execute_script(
                "return Array.from(document.querySelectorAll('a')).map(a => a.getAttribute('href'))")
            check(f"{name}: only the page's own anchors", all(h.startswith("#m") for h in hrefs), hrefs)
            # The inline style sheet applies: a message card has its 4px left border.
            width = d.execute_script(
                "const a = document.querySelector('article.msg');"
                "return a ? getComputedStyle(a).borderLeftWidth : '4px'")
            check(f"{name}: the style sheet applies", width == "4px", width)
            logs = [l["message"] for l in d.get_log("browser")]
            csp = [m for m in logs if "Content Security Policy" in m or "Content-Security-Policy" in m]
            check(f"{name}: no CSP violation", csp == [], csp)
            # A tool call opens without script (<details>), showing its output.
            tools = d.find_elements(By.CSS_SELECTOR, "details.tool > summary")
            if tools:
                tools[0].click()
                shown = d.execute_script(
                    "return document.querySelector('details.tool').open")
                check(f"{name}: a tool call opens", shown is True, shown)
            check(f"{name}: still nothing ran",
                  d.execute_script("return typeof window.__pwned") == "undefined")
    finally:
        d.quit()
    print(f"{web_test.PASSED} passed, 0 failed", flush=True)


main()
