# The two commands: `make run` and `make test`. Both create .venv from the project's own files.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run thesis test browser bench docs clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

# The showcase: a flexible three-link arm makes one move three ways under decoupling + LQR control
# (the sinusoidal profile, its ZVD-shaped version, the optimal plan of fm.plan tracked with feed-forward); writes
# results/showcase/report.html (the three moves' error curves and 3D animations side by side, plots, model,
# equations) and summary.png.
run: $(STAMP)
	$(VENV)/bin/flexman report flx_three_link_lqr --controller --compare --t-final 4.5 --dt 2e-3 --out results/showcase

# The thesis experiment (000 sec. 3.3.5): PID joint controllers switched off at 0.5 s, free arm after.
thesis: $(STAMP)
	$(VENV)/bin/flexman report flx_three_link --controller --t-final 2.0 --out results/flx_three_link

# The suite includes a real-browser test of the report, which drives Debian's chromium: `browser`
# installs it first when it is missing (apt-get update, apt-get install chromium; as root or with
# passwordless sudo), or stops before the tests with the command that installs it.
test: browser $(STAMP)
	$(PY) -m pytest -q -n 2 --dist loadgroup --durations=10

# The API reference (generated from the docstrings) and the how-tos of docs/, offline, into site/.
docs: $(STAMP)
	$(PY) tools/api_pages.py
	$(VENV)/bin/mkdocs build --strict

# FLEXMAN_SKIP_BROWSER=1 skips the browser test on purpose (and this step); FLEXMAN_CHROMIUM names
# another chromium binary.
browser:
	@if [ "$$FLEXMAN_SKIP_BROWSER" = 1 ] || [ -n "$$FLEXMAN_CHROMIUM" ] \
	    || command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ]; then SUDO=""; \
	elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO="sudo -n"; \
	else echo "make test: the browser test needs Debian's chromium; install it, then run make test again:" >&2; \
	     echo "    sudo apt-get update && sudo apt-get install -y chromium" >&2; \
	     echo "(or FLEXMAN_SKIP_BROWSER=1 make test runs the suite without that test)" >&2; exit 1; fi; \
	echo "make test: installing Debian's chromium for the browser test (apt-get update; apt-get install chromium)"; \
	$$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	$$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null

bench: $(STAMP)
	$(PY) bench/rigid.py

clean:
	rm -rf $(VENV) results site
