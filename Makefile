# ScanGate — the two commands a newcomer needs: `make run` and `make test`.
SWIFT ?= swift
CAMERA ?= sim:HELLO-SCANGATE
BIN_DEBUG := .build/debug/scangate
BIN_RELEASE := .build/release/scangate

.PHONY: all deps build release run test test-unit test-soak test-fuzz test-sanitizers hil powercut test-powercut bench bench-frames bench-chart deb fuzz soak sanitizers clean

all: build

deps:
	@scripts/install-deps build

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release --static-swift-stdlib

## Run the daemon on the simulated camera (a QR code that appears and leaves, forever). Ctrl-C stops it.
run: build
	$(BIN_DEBUG) run --camera $(CAMERA)

## Every test, as CI runs it through .ci/run: unit and integration tests, a 100k-frame soak, the
## hardware-in-the-loop suite against real drivers, 10 s of each fuzz target, and the whole unit suite
## under ThreadSanitizer and AddressSanitizer, and POWERCUT_TEST_CYCLES power cuts on the HIL rig.
test: test-unit test-soak hil test-powercut test-fuzz test-sanitizers

## Unit and integration tests only (no VM), for quick work. The packaging tests need dpkg-dev,
## systemd-analyze and udev, so the deb group is installed too; the interop tests need the real peers
## (mosquitto, node exporter) and the PyPI ones in .build/venv (scripts/python-env).
test-unit:
	@scripts/check-package
	@scripts/install-deps build test deb
	@scripts/python-env
	$(SWIFT) build --build-tests
	@# The daemons the tests start keep their status socket and lock in a directory of their own, not
	@# /run/scangate: a daemon already running here, or another test run, does not collide with them.
	RUNTIME_DIRECTORY=$$(mktemp -d /tmp/scangate-unit.XXXXXX) $(SWIFT) test --skip-build --disable-swift-testing

## Hardware-in-the-loop: the scangate binary against vivid, gpio-sim, snd-aloop and an 8250 UART in a QEMU VM.
hil: release
	@scripts/install-deps hil
	Tests/HIL/run $(BIN_RELEASE)

## Power cuts (Tests/HIL/powercut): the HIL VM with an ext4 virtio disk, QEMU killed at random moments
## while scangate writes, booted again on the same disk and checked. `make powercut CYCLES=500` is the long run.
CYCLES ?= 50
POWERCUT_TEST_CYCLES ?= 8
powercut: release
	Tests/HIL/powercut $(BIN_RELEASE) --cycles $(CYCLES)

test-powercut: release
	Tests/HIL/powercut $(BIN_RELEASE) --cycles $(POWERCUT_TEST_CYCLES)

## Every benchmark, with the live-path frames (scripts/live-frames: made once under .build/live-frames,
## LIVE_FRAMES_N per category) scored side by side; `make bench-frames` runs that stage alone.
LIVE_FRAMES_N ?= 30
bench: release
	frames=$$(scripts/live-frames --per-category $(LIVE_FRAMES_N)) && $(BIN_RELEASE) bench --live-frames "$$frames"

bench-frames: release
	frames=$$(scripts/live-frames --per-category $(LIVE_FRAMES_N)) && $(BIN_RELEASE) bench --only live-frames --live-frames "$$frames"

## The same table as JSON and as a PNG of the read rate per category: .build/live-frames/read-rate.png.
bench-chart: release
	frames=$$(scripts/live-frames --per-category $(LIVE_FRAMES_N)) \
	  && $(BIN_RELEASE) bench --only live-frames --live-frames "$$frames" --json > .build/live-frames/bench.json \
	  && .build/venv/bin/python Tests/LiveFrames/chart.py .build/live-frames/bench.json .build/live-frames/read-rate.png \
	  && echo "bench-chart: .build/live-frames/read-rate.png (table: .build/live-frames/bench.json)"

deb: release
	@scripts/install-deps deb
	deploy/debian/build-deb $(BIN_RELEASE)

## libFuzzer targets (Tests/Fuzz/README.md), FUZZ_SECONDS each (CI: 10 s each, two targets at a time
## on the two cores: each libFuzzer run is one process on one core).
FUZZ_SECONDS ?= 60
fuzz: deps
	Tests/Fuzz/run --seconds $(FUZZ_SECONDS)

test-fuzz: deps
	Tests/Fuzz/run --seconds 10 --jobs 2

## The unit suite under each sanitizer (Tests/Sanitizers/README.md); needs the debug binary (test-unit).
## make test leaves out the suites in SANITIZER_SKIP under both: long end-to-end runs whose subject is
## neither threads nor memory (kill -9 durability, photo accuracy, benchmarks, packaging, the installer's
## commands, OSDP doctor's report, the credential and site-policy rules through run, anti-passback, the
## pass parsers against Python peers (fuzzed under ASan instead), the pages in Chromium). Under TSan it also
## leaves out THREAD_SKIP (hostile payloads: a memory subject, kept under ASan); under ASan ADDRESS_SKIP
## (whole runs through the pipeline, OSDP and the status-list file watch: their threads stay under TSan).
## `make sanitizers` runs the whole suite under both.
SANITIZER_SKIP ?= CredentialCrashTests|AccuracyTests|LiveFrameBenchTests|OSDPBenchTests|DeployDebianPackageTests|DeployUnitTests|InstallerDayTests|CommandLineTests|OSDPDoctorTests|SitePolicyRunTests|HolderWalletPageTests|PreviewPageTests|CredentialRunTests|AntipassbackRunTests|SiteMQTTRunTests|HolderBindingPeerTests|CredentialPeerTests
THREAD_SKIP ?= HostilePayloadTests
ADDRESS_SKIP ?= EndToEndScenarioTests|OSDPRunTests|CredentialStatusListRunTests
test-sanitizers: test-unit
	Tests/Sanitizers/run thread --skip '^ScanGateTests\.($(SANITIZER_SKIP)|$(THREAD_SKIP))/'
	Tests/Sanitizers/run address --skip '^ScanGateTests\.($(SANITIZER_SKIP)|$(ADDRESS_SKIP))/'

sanitizers: test-unit
	Tests/Sanitizers/run thread
	Tests/Sanitizers/run address

## 1,000,000 replayed frames; `make test` runs the 100,000-frame version (test-soak).
soak: release
	$(BIN_RELEASE) soak

test-soak: release
	$(BIN_RELEASE) soak --frames 100000

clean:
	rm -rf .build build
