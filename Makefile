# The two commands: `make run` and `make test`. Both create .venv from the project's own files.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run thesis test bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

# The showcase: a flexible three-link arm makes one move three ways under decoupling + LQR control
# (the sinusoidal profile, its ZVD-shaped version, the optimal plan of fm.plan tracked with feed-forward); writes
# results/showcase/report.html (3D animation, plots, model, equations) and summary.png.
run: $(STAMP)
	$(VENV)/bin/flexman report flx_three_link_lqr --controller --compare --t-final 4.5 --dt 2e-3 --out results/showcase

# The thesis experiment (000 sec. 3.3.5): PID joint controllers switched off at 0.5 s, free arm after.
thesis: $(STAMP)
	$(VENV)/bin/flexman report flx_three_link --controller --t-final 2.0 --out results/flx_three_link

test: $(STAMP)
	$(PY) -m pytest -q -n 2

bench: $(STAMP)
	$(PY) bench/rigid.py

clean:
	rm -rf $(VENV) results
