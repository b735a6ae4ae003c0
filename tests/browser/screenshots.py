"""The README's screenshots of `memtrail web` (docs/web-*.png), from a running server.

    python screenshots.py URL OUT_DIR [NAME...]

With names, only those pictures (analytics: of the 1 GB bench store, 2025-01-01 to 2025-03-20;
search-meaning: a store with the tiny test model's vectors, `memtrail embed` run).

Chromium headless at 1200 px wide through chromedriver (as web_test.py). The store behind URL
is the one docs/web.md names: the project's and the shared fixtures' sessions, the hostile one
included. Each picture is checked by eye before it is committed.
"""

import os
import sys
import time

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

base, out = sys.argv[1].rstrip("/"), sys.argv[2]
opts = Options()
opts.binary_location = os.environ.get("MEMTRAIL_CHROMIUM", "/usr/bin/chromium")
for a in ["--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1200,900"]:
    opts.add_argument(a)
d = webdriver.Chrome(service=Service(os.environ.get("MEMTRAIL_CHROMEDRIVER", "/usr/bin/chromedriver")), options=opts)


def shot(name, path, height=900, setup=None):
    d.set_window_size(1200, height)
    d.get(base + path)
    time.sleep(0.3)
    if setup:
        setup()
        time.sleep(0.5)
    d.save_screenshot(os.path.join(out, f"web-{name}.png"))
    print(name)


def type_query():
    d.find_element(By.ID, "q").send_keys("files")


def open_first_tool():
    d.find_elements(By.CSS_SELECTOR, "details.tool > summary")[4].click()
    d.find_element(By.CSS_SELECTOR, "#events > summary").click()


only = set(sys.argv[3:])
if only:
    real_shot = shot

    def shot(name, *a, **k):
        if name in only:
            real_shot(name, *a, **k)


try:
    shot("analytics", "/analytics?until=2025-03-20&days=79", 3550)
    shot("search-meaning", "/search?q=database+server+rejects+clients&mode=semantic", 800)
    shot("search", "/", 800, type_query)
    shot("sessions", "/sessions", 800)
    shot("session", "/session?id=codemie-tmp-private-4c2ddfdc-b619-4525-8d03-1950fb1b0257&agent=claude", 1500, open_first_tool)
    shot("hostile", "/session?id=9d0c7e21-hostile-4b6a-9f11-5c3e2d1a0b99&agent=claude", 900,
         lambda: [s.click() for s in d.find_elements(By.CSS_SELECTOR, "details.tool > summary")])
    shot("status", "/status", 900)
    shot("delete", "/session/delete?id=claude-session", 600)
finally:
    d.quit()
