"""Check the built documentation site: every link resolves, nothing comes from the network, every page loads.

Run after the build (``.ci/run``)::

    python docs/check_site.py [docs/_build/html]

Two passes over every HTML page of the build:

1. Its markup: every internal ``href``/``src`` names a file of the build (and its ``#anchor`` an id of that
   page), every stylesheet's ``url(...)`` too, and no script, stylesheet, image, font or frame is loaded from
   another host (links *to* other sites are fine; loading *from* them is not).
2. Headless Chromium (Debian's ``chromium``) loads it, driven through the DevTools protocol on a pipe, with
   every host name unresolvable: any console error, uncaught exception, failed request, request that leaves
   the machine or image it cannot show is a problem.

Prints a summary (pages, links, images, stylesheets checked; pages loaded) and exits 1 with the list of
problems, or 2 when there is no build or no browser.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urldefrag, urlsplit

SKIP_FOLDERS = {"_static", "_sources", "_images", "_downloads"}
# Tags and attributes that make the browser load something (as opposed to a link a reader may follow).
LOADS = {("script", "src"), ("link", "href"), ("img", "src"), ("iframe", "src"), ("source", "src"),
         ("video", "src"), ("audio", "src"), ("embed", "src"), ("object", "data"), ("input", "src")}
LOAD_SECONDS = 30.0  # one page, in the browser, on a loaded machine
SETTLE_SECONDS = 0.5  # quiet time after the load event before a page counts as done
# Images the browser could not decode or show (a data: URI that is not an image fails no request).
BROKEN_IMAGES = ("Array.from(document.images).filter(i => i.loading !== 'lazy' && (!i.complete || i.naturalWidth === 0))"
                 ".map(i => i.currentSrc.length > 100 ? i.currentSrc.slice(0, 100) + '...' : i.currentSrc)")


class Page(HTMLParser):
    """The ids of a page and every URL it names, with the tag that names it."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.urls: list[tuple[str, str, str]] = []  # (tag, attribute, url)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value for name, value in attrs if value is not None}
        for name in ("id", "name") if tag == "a" else ("id",):
            if name in values:
                self.ids.add(values[name])
        for attribute in ("href", "src", "data", "poster"):
            if attribute in values:
                if tag == "link" and attribute == "href" and not _loaded_link(values):
                    self.urls.append(("a", attribute, values[attribute]))  # a canonical/next/prev link, not loaded
                else:
                    self.urls.append((tag, attribute, values[attribute]))
        if "srcset" in values:
            for part in values["srcset"].split(","):
                if part.strip():
                    self.urls.append((tag, "srcset", part.split()[0]))


def _loaded_link(values: dict[str, str]) -> bool:
    rel = set(values.get("rel", "").lower().split())
    return bool(rel & {"stylesheet", "preload", "icon", "modulepreload", "manifest", "prefetch"})


def _external(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme in ("http", "https", "ws", "wss", "ftp") or url.startswith("//")


def _skipped(url: str) -> bool:
    return urlsplit(url).scheme in ("mailto", "javascript", "data", "tel", "blob", "about")


class Links:
    """The static pass: links, anchors, images, stylesheets."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.parsed: dict[Path, Page] = {}
        self.problems: list[str] = []
        self.counts: dict[str, int] = defaultdict(int)

    def page(self, path: Path) -> Page:
        if path not in self.parsed:
            page = Page()
            page.feed(path.read_text(encoding="utf-8", errors="replace"))
            self.parsed[path] = page
        return self.parsed[path]

    def check(self, pages: list[Path]) -> None:
        stylesheets: set[Path] = set()
        for path in pages:
            where = path.relative_to(self.root)
            for tag, attribute, url in self.page(path).urls:
                loads = (tag, attribute) in LOADS or attribute == "srcset"
                if tag == "img":
                    self.counts["images"] += 1  # a figure embedded as data: too
                if _skipped(url) or url == "":
                    continue
                if tag != "img":
                    self.counts["resources" if loads else "links"] += 1
                if _external(url):
                    if loads:
                        self.problems.append(f"{where}: <{tag} {attribute}={url!r}> loads from the network")
                    continue
                target = self._target(path, url, where, f"<{tag} {attribute}>")
                if target is not None and target.suffix == ".css":
                    stylesheets.add(target)
        for sheet in sorted(stylesheets):
            self._stylesheet(sheet)

    def _target(self, page: Path, url: str, where: Path, what: str) -> Path | None:
        address, anchor = urldefrag(url)
        address = unquote(urlsplit(address).path)
        target = page if address == "" else (page.parent / address).resolve()
        if target.is_dir():
            target = target / "index.html"
        if not target.is_file():
            self.problems.append(f"{where}: {what} {url!r}: no file {target}")
            return None
        if not str(target).startswith(str(self.root.resolve())) and not str(target).startswith(str(self.root)):
            self.problems.append(f"{where}: {what} {url!r} points outside the site")
            return None
        if anchor and target.suffix == ".html":
            self.counts["anchors"] += 1
            if unquote(anchor) not in self.page(target).ids:
                self.problems.append(f"{where}: {what} {url!r}: no id {anchor!r} in {target.relative_to(self.root.resolve())}")
        return target

    def _stylesheet(self, sheet: Path) -> None:
        self.counts["stylesheets"] += 1
        text = sheet.read_text(encoding="utf-8", errors="replace")
        where = sheet.relative_to(self.root.resolve())
        for url in re.findall(r"""url\(\s*['"]?([^'")]+)['"]?\s*\)""", text):
            url = url.strip()
            if _skipped(url) or url.startswith("#") or url.startswith("%23"):
                continue
            if _external(url):
                self.problems.append(f"{where}: url({url}) loads from the network")
                continue
            address = unquote(urlsplit(urldefrag(url)[0]).path)
            if not (sheet.parent / address).resolve().is_file():
                self.problems.append(f"{where}: url({url}): no file {(sheet.parent / address).resolve()}")
        for url in re.findall(r"""@import\s+['"]([^'"]+)['"]""", text):
            if _external(url):
                self.problems.append(f"{where}: @import {url} loads from the network")


class Browser:
    """Headless Chromium driven through the DevTools protocol on a pipe (``--remote-debugging-pipe``)."""

    def __init__(self, executable: str) -> None:
        commands_read, self._commands = os.pipe()
        self._replies, replies_write = os.pipe()

        def pipes() -> None:  # in the child: the protocol's pipes are its fds 3 (in) and 4 (out)
            read, write = os.dup(commands_read), os.dup(replies_write)
            os.dup2(read, 3)
            os.dup2(write, 4)

        flags = ["--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe", "--no-first-run",
                 "--disable-extensions", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-default-browser-check", "--allow-file-access-from-files",
                 # nothing may leave the machine: every host name fails to resolve
                 "--host-resolver-rules=MAP * ~NOTFOUND", "about:blank"]
        self.process = subprocess.Popen([executable, *flags], preexec_fn=pipes, close_fds=False,
                                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(commands_read)
        os.close(replies_write)
        self._buffer = b""
        self._next = 0
        self.events: list[dict] = []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable", session=self.session)

    def _send(self, method: str, session: str | None, params: dict) -> int:
        self._next += 1
        message = {"id": self._next, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self._commands, json.dumps(message).encode() + b"\0")
        return self._next

    def _receive(self, deadline: float) -> dict | None:
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                return None
            import select

            ready, _, _ = select.select([self._replies], [], [], min(0.1, max(0.0, deadline - time.monotonic())))
            if ready:
                chunk = os.read(self._replies, 1 << 20)
                if not chunk:
                    raise RuntimeError("chromium closed its DevTools pipe")
                self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method: str, session: str | None = None, **params) -> dict:
        number = self._send(method, session, params)
        deadline = time.monotonic() + LOAD_SECONDS
        while True:
            message = self._receive(deadline)
            if message is None:
                raise RuntimeError(f"chromium did not answer {method} within {LOAD_SECONDS:.0f} s")
            if message.get("id") == number:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            if "method" in message:
                self.events.append(message)

    def load(self, url: str) -> list[str]:
        """The problems seen while ``url`` loads: console errors, exceptions, failed or external requests."""
        self.events = []
        self.call("Page.navigate", session=self.session, url=url)
        deadline = time.monotonic() + LOAD_SECONDS
        loaded, quiet_since = False, time.monotonic()
        while time.monotonic() < deadline:
            message = self._receive(min(deadline, time.monotonic() + 0.1))
            if message is not None:
                if "method" in message:
                    self.events.append(message)
                    loaded = loaded or message["method"] == "Page.loadEventFired"
                quiet_since = time.monotonic()
            elif loaded and time.monotonic() - quiet_since >= SETTLE_SECONDS:
                break
        problems = [] if loaded else [f"did not finish loading within {LOAD_SECONDS:.0f} s"]
        broken = self.call("Runtime.evaluate", session=self.session, returnByValue=True, expression=BROKEN_IMAGES)
        problems += [f"image not shown: {source}" for source in broken.get("result", {}).get("value") or []]
        requested: dict[str, str] = {}
        for event in self.events:
            method, params = event["method"], event.get("params", {})
            if method == "Network.requestWillBeSent":
                request_url = params["request"]["url"]
                requested[params["requestId"]] = request_url
                if _external(request_url):
                    problems.append(f"requests {request_url}")
            elif method == "Network.loadingFailed" and not params.get("canceled"):
                problems.append(f"request failed: {requested.get(params['requestId'], '?')} ({params.get('errorText')})")
            elif method == "Network.responseReceived" and params["response"].get("status", 200) >= 400:
                problems.append(f"HTTP {params['response']['status']}: {params['response']['url']}")
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                text = " ".join(str(arg.get("value", arg.get("description", ""))) for arg in params.get("args", []))
                problems.append(f"console error: {text}")
            elif method == "Runtime.exceptionThrown":
                details = params.get("exceptionDetails", {})
                text = details.get("exception", {}).get("description") or details.get("text", "")
                problems.append(f"uncaught exception: {text.splitlines()[0] if text else '?'}")
            elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
                entry = params["entry"]
                problems.append(f"console error: {entry.get('text', '')} {entry.get('url', '')}".strip())
        return list(dict.fromkeys(problems))

    def close(self) -> None:
        try:
            self._send("Browser.close", None, {})
            self.process.wait(timeout=10)
        except Exception:
            self.process.kill()
        finally:
            os.close(self._commands)
            os.close(self._replies)


def pages_of(root: Path) -> list[Path]:
    return sorted(path for path in root.rglob("*.html")
                  if not SKIP_FOLDERS & set(path.relative_to(root).parts[:-1]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site", nargs="?", default=str(Path(__file__).resolve().parent / "_build" / "html"),
                        help="the built site's folder (default: docs/_build/html)")
    parser.add_argument("--no-browser", action="store_true", help="the static pass only")
    args = parser.parse_args(argv)
    root = Path(args.site).resolve()
    pages = pages_of(root) if root.is_dir() else []
    if not pages:
        print(f"check_site: no HTML pages under {root}; build the site first "
              "(python -m sphinx -W --keep-going -b html docs docs/_build/html)", file=sys.stderr)
        return 2
    started = time.monotonic()
    links = Links(root)
    links.check(pages)
    problems = list(links.problems)
    loaded = 0
    if not args.no_browser:
        executable = shutil.which("chromium") or shutil.which("chromium-browser")
        if executable is None:
            print("check_site: Debian's chromium is not installed (apt-get install chromium); "
                  "run with --no-browser for the static pass only", file=sys.stderr)
            return 2
        browser = Browser(executable)
        try:
            for path in pages:
                problems += [f"{path.relative_to(root)}: {problem}" for problem in browser.load(path.as_uri())]
                loaded += 1
        finally:
            browser.close()
    counts = links.counts
    print(f"check_site: {len(pages)} pages, {counts['links']} links ({counts['anchors']} with an anchor), "
          f"{counts['images']} images, {counts['resources']} scripts and stylesheets, {counts['stylesheets']} "
          f"stylesheets' url()s checked; {loaded} pages loaded in chromium; {time.monotonic() - started:.1f} s")
    if problems:
        print(f"check_site: {len(problems)} problems:", file=sys.stderr)
        for problem in problems:
            print(f"  {problem}", file=sys.stderr)
        return 1
    print("check_site: no problems")
    return 0


if __name__ == "__main__":
    sys.exit(main())
