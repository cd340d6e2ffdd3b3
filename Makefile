# ScanGate — the two commands a newcomer needs: `make run` and `make test`.
SWIFT ?= swift
CAMERA ?= sim:HELLO-SCANGATE
BIN_DEBUG := .build/debug/scangate
BIN_RELEASE := .build/release/scangate

.PHONY: all deps build release run test test-unit test-soak hil bench deb fuzz soak clean

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

## Every test: unit and integration tests, a 100k-frame soak, then the hardware-in-the-loop suite
## against real drivers (CI runs exactly this through .ci/run).
test: test-unit test-soak hil

## Unit and integration tests only (no VM), for quick work. The packaging tests need dpkg-dev,
## systemd-analyze and udev, so the deb group is installed too.
test-unit:
	@scripts/install-deps build deb
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

## Hardware-in-the-loop: the scangate binary against vivid, gpio-sim, snd-aloop and an 8250 UART in a QEMU VM.
hil: release
	@scripts/install-deps hil
	Tests/HIL/run $(BIN_RELEASE)

bench: release
	$(BIN_RELEASE) bench

deb: release
	@scripts/install-deps deb
	deploy/debian/build-deb $(BIN_RELEASE)

## libFuzzer targets (Tests/Fuzz/README.md), FUZZ_SECONDS each (CI: Tests/Fuzz/run --seconds 10).
FUZZ_SECONDS ?= 60
fuzz: deps
	Tests/Fuzz/run --seconds $(FUZZ_SECONDS)

## 1,000,000 replayed frames; `make test` runs the 100,000-frame version (test-soak).
soak: release
	$(BIN_RELEASE) soak

test-soak: release
	$(BIN_RELEASE) soak --frames 100000

clean:
	rm -rf .build build
