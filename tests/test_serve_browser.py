"""The derivation viewer in a real browser: `python -m decoder.serve` on a free port of 127.0.0.1,
Debian's chromium headless driven by selenium through chromedriver; type Genesis 1:1, wait for
the tree and the heat maps, and check what they show against the API's answer."""
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from serve_fixtures import TRANSLATION, VERSE, write_genesis_model

CHROMIUM = os.environ.get("CKY_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"

pytest.importorskip("starlette", reason="cky serve needs the `serve` extra: pip install cky-decoder[serve]")
webdriver = pytest.importorskip("selenium.webdriver", reason="the browser test needs selenium (the `serve` extra)")
if not (os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK)):
    pytest.skip(f"no chromium at {CHROMIUM} or no chromedriver (Debian: apt-get install chromium chromium-driver)",
                allow_module_level=True)

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    config = write_genesis_model(tmp_path_factory.mktemp("genesis"))
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "decoder.serve", "--config", config, "--port", str(port)],
                               cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(url + "/health", timeout=1) as response:
                    if json.load(response)["status"] == "ok":
                        break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    process.kill()
                    pytest.fail("cky serve did not start:\n" + process.stdout.read().decode(errors="replace"))
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(10)
        process.stdout.close()


@pytest.fixture(scope="module")
def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=webdriver.ChromeService(executable_path=CHROMEDRIVER), options=options)
    yield driver
    driver.quit()


def api(url: str, body: dict) -> dict:
    request = urllib.request.Request(url + "/translate", json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)


def test_typing_a_verse_draws_its_tree_rules_kbest_and_heat_maps(server, browser):
    browser.get(server + "/")
    box = browser.find_element(By.ID, "sentence")
    box.send_keys(VERSE)
    kbest = browser.find_element(By.ID, "kbest")
    kbest.clear()
    kbest.send_keys("3")
    browser.find_element(By.ID, "translate").click()
    WebDriverWait(browser, 15).until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-rendered"))

    assert browser.find_element(By.ID, "text").text == TRANSLATION
    # the tree: its leaves, left to right, are the translation; its nodes include the verse's phrases
    leaves = browser.find_elements(By.CSS_SELECTOR, "#tree-svg g.leaf")
    assert " ".join(leaf.get_attribute("data-label") for leaf in leaves) == TRANSLATION
    labels = [node.get_attribute("data-label") for node in browser.find_elements(By.CSS_SELECTOR, "#tree-svg g.node")]
    assert labels[-1] == "GOAL" and labels.count("NP") == 4 and {"S", "PP", "VBD", "NNP"} <= set(labels)
    assert len(browser.find_elements(By.CSS_SELECTOR, "#tree-svg line.edge")) == len(labels) + len(leaves) - 1

    # the heat maps: one rect per chart cell the API reports, with its counts
    expected = api(server, {"sentence": VERSE})
    cells = sorted(map(tuple, expected["stats"]["chart_cells"]))
    for kind in ("items", "edges"):
        rects = browser.find_elements(By.CSS_SELECTOR, f"svg.heatmap[data-kind={kind}] rect.cell")
        shown = sorted(tuple(int(r.get_attribute(f"data-{key}")) for key in ("start", "length", "items", "edges"))
                       for r in rects)
        assert shown == cells
    assert (0, 11, 1, 1) in cells  # the whole verse: one S item

    # the rules: the reordering S rule with its binarization; the k-best list
    rows = [row.text for row in browser.find_elements(By.CSS_SELECTOR, "#rules tr.rule")]
    assert any("S -> [PP] [VBD] [NNP] [NP] [.] ||| [PP] [NNP] [VBD] [NP] [.]" in row for row in rows)
    assert len(rows) == len(expected["rules"])
    shown = [item.text for item in browser.find_elements(By.CSS_SELECTOR, "#kbest-list li .kbest-text")]
    assert shown == [t["text"] for t in api(server, {"sentence": VERSE, "kbest": 3})["kbest"]]
    assert shown[0] == TRANSLATION and "start" in shown[1]  # principio: beginning or start
    assert "created god" in shown[2]  # glued in Spanish order, without the S rule's reordering


def test_a_bad_request_shows_the_error_and_the_page_keeps_working(server, browser):
    browser.get(server + "/")
    browser.find_element(By.ID, "sentence").send_keys("   ")
    browser.find_element(By.ID, "translate").click()
    WebDriverWait(browser, 10).until(lambda d: "empty" in d.find_element(By.ID, "status").text)
    box = browser.find_element(By.ID, "sentence")
    box.clear()
    box.send_keys("la tierra")
    browser.find_element(By.ID, "translate").click()
    WebDriverWait(browser, 10).until(lambda d: d.find_element(By.ID, "text").text == "the earth")
