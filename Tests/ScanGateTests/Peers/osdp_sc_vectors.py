#!/usr/bin/env python3
"""Secure-channel test vectors for ScanGate's OSDP peripheral, computed independently of it.

Written from the OSDP v2 secure-channel formulas (SIA OSDP 2.2 Annex D, as summarised in
/work/shared/notes/door.md and checked there against libosdp), with AES from PyPI `cryptography`
(.build/venv). Nothing here imports or mirrors the Swift code: the CRC, the frame layout, the key
derivation, the cryptograms, the MAC chain and the data-block encryption are all written again.

It plays one control panel session against a PD with fixed inputs (SCBK, the CP's RND.A, the PD's
RND.B, the PD's identity, one queued read) and prints, as JSON, every intermediate value and every
command frame with the exact reply frame the PD must send. ScanGate's tests feed the commands to the
state machine (with RND.B injected as its random source) and compare the replies byte for byte.

Usage: osdp_sc_vectors.py > Tests/ScanGateTests/Fixtures/osdp-sc-vectors.json
"""
import json
import sys

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

SOM = 0x53
MARK = 0xFF


def aes_ecb(key, block):
    assert len(block) == 16
    enc = Cipher(algorithms.AES(key), modes.ECB()).encryptor()
    return enc.update(block) + enc.finalize()


def aes_cbc_encrypt(key, iv, data):
    enc = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
    return enc.update(data) + enc.finalize()


def xor(a, b):
    return bytes(x ^ y for x, y in zip(a, b))


def invert(a):
    return bytes((~x) & 0xFF for x in a)


def crc16_aug_ccitt(data):
    """CRC-16/AUG-CCITT: poly 0x1021, init 0x1D0F, not reflected, no final XOR."""
    crc = 0x1D0F
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else (crc << 1)
            crc &= 0xFFFF
    return crc


def pad80(data):
    """0x80 then zeros up to a whole number of 16-byte blocks (always at least the 0x80)."""
    data = data + b"\x80"
    return data + b"\x00" * ((16 - len(data) % 16) % 16)


def mac16(s_mac1, s_mac2, iv, message):
    """The OSDP MAC: CBC over the message with S-MAC1 for every block but the last, S-MAC2 for the
    last; padded with 0x80 00.. only when the message is not a whole number of blocks."""
    if len(message) % 16:
        message = pad80(message)
    blocks = [message[i:i + 16] for i in range(0, len(message), 16)]
    chain = iv
    for block in blocks[:-1]:
        chain = aes_ecb(s_mac1, xor(chain, block))
    return aes_ecb(s_mac2, xor(chain, blocks[-1]))


class Session:
    """One CP<->PD session: session keys and the two MAC chains."""

    def __init__(self, scbk, rnd_a, rnd_b):
        def derive(prefix):
            return aes_ecb(scbk, prefix + rnd_a[:6] + b"\x00" * 8)
        self.s_enc = derive(b"\x01\x82")
        self.s_mac1 = derive(b"\x01\x01")
        self.s_mac2 = derive(b"\x01\x02")
        self.client_cryptogram = aes_ecb(self.s_enc, rnd_a + rnd_b)   # PD -> CP in CCRYPT
        self.server_cryptogram = aes_ecb(self.s_enc, rnd_b + rnd_a)   # CP -> PD in SCRYPT
        self.rmac_i = aes_ecb(self.s_mac2, aes_ecb(self.s_mac1, self.server_cryptogram))
        self.last_reply_mac = self.rmac_i
        self.last_command_mac = None


def frame(address, sequence, code, data=b"", scb=None, session=None, is_command=True, encrypt=False,
          mark=True, corrupt_mac=False):
    """A complete wire frame. With `session`, a 4-byte MAC is added and the chains advance: a command's
    MAC starts from the last reply MAC, a reply's from that command's MAC; encrypted data uses the
    inverted chain value as its IV."""
    control = (sequence & 3) | 0x04 | (0x08 if scb is not None else 0)
    body = bytes([code])
    if encrypt:
        iv_source = session.last_reply_mac if is_command else session.last_command_mac
        body += aes_cbc_encrypt(session.s_enc, invert(iv_source), pad80(data))
    else:
        body += data
    scb_bytes = scb or b""
    length = 5 + len(scb_bytes) + len(body) + (4 if session else 0) + 2
    message = bytes([SOM, address, length & 0xFF, length >> 8, control]) + scb_bytes + body
    if session:
        iv = session.last_reply_mac if is_command else session.last_command_mac
        m = mac16(session.s_mac1, session.s_mac2, iv, message)
        if corrupt_mac:
            sent = bytes([m[0] ^ 0x01]) + m[1:4]
        else:
            sent = m[:4]
            if is_command:
                session.last_command_mac = m
            else:
                session.last_reply_mac = m
        message += sent
    message += crc16_aug_ccitt(message).to_bytes(2, "little")
    return (bytes([MARK]) if mark else b"") + message


def main():
    scbk = bytes(range(0x40, 0x50))               # the SCBK in the PD's key file
    rnd_a = bytes.fromhex("B0B1B2B3B4B5B6B7")      # the CP's random (in CHLNG)
    rnd_b = bytes.fromhex("A0A1A2A3A4A5A6A7")      # the PD's random (its random source in the test)
    identity = {"vendor_code": 0x0A0B0C, "model": 0x21, "version": 0x01, "serial": 0x11223344,
                "firmware": [1, 2, 3]}
    # cUID: vendor code (3 bytes, LE), model (1), serial number (4, LE).
    cuid = (identity["vendor_code"].to_bytes(3, "little") + bytes([identity["model"]])
            + identity["serial"].to_bytes(4, "little"))
    card = b"QR-PASS-0042"
    pd_address = 0x05
    reply_address = pd_address | 0x80

    s = Session(scbk, rnd_a, rnd_b)
    exchanges = []

    def exchange(note, command, reply):
        exchanges.append({"note": note, "command": command.hex().upper(), "reply": reply.hex().upper()})

    # seq 0: CHLNG (SCB 03 11 01: use the SCBK) -> CCRYPT (SCB 03 12 01): cUID, RND.B, client cryptogram.
    exchange("CHLNG -> CCRYPT",
             frame(pd_address, 0, 0x76, rnd_a, scb=b"\x03\x11\x01"),
             frame(reply_address, 0, 0x76, cuid + rnd_b + s.client_cryptogram, scb=b"\x03\x12\x01"))
    # seq 1: SCRYPT (SCB 03 13 01) with the server cryptogram -> RMAC_I (SCB 03 14 01).
    exchange("SCRYPT -> RMAC_I",
             frame(pd_address, 1, 0x77, s.server_cryptogram, scb=b"\x03\x13\x01"),
             frame(reply_address, 1, 0x78, s.rmac_i, scb=b"\x03\x14\x01"))
    # seq 2: POLL with a MAC (SCS_15) -> ACK with a MAC (SCS_16).
    c = frame(pd_address, 2, 0x60, scb=b"\x02\x15", session=s, is_command=True)
    r = frame(reply_address, 2, 0x40, scb=b"\x02\x16", session=s, is_command=False)
    exchange("POLL (SCS_15) -> ACK (SCS_16)", c, r)
    # seq 3: LED, encrypted (SCS_17): reader 0, LED 0, temporary: set, 5 on / 5 off (100 ms units),
    # green on, off colour off, timer 30 (3 s); permanent: set, steady red -> ACK (SCS_16).
    led = bytes([0, 0, 2, 5, 5, 2, 0, 30, 0, 1, 1, 0, 1, 1])
    c = frame(pd_address, 3, 0x69, led, scb=b"\x02\x17", session=s, is_command=True, encrypt=True)
    r = frame(reply_address, 3, 0x40, scb=b"\x02\x16", session=s, is_command=False)
    exchange("LED (SCS_17) -> ACK (SCS_16)", c, r)
    # seq 1: POLL with a read waiting -> RAW encrypted (SCS_18): reader 0, format 0, bit count LE, bytes.
    raw = bytes([0, 0]) + (len(card) * 8).to_bytes(2, "little") + card
    c = frame(pd_address, 1, 0x60, scb=b"\x02\x15", session=s, is_command=True)
    r = frame(reply_address, 1, 0x50, raw, scb=b"\x02\x18", session=s, is_command=False, encrypt=True)
    exchange("POLL (SCS_15) -> RAW (SCS_18)", c, r)
    # seq 2: ID, encrypted (data 00) -> PDID encrypted (SCS_18).
    pdid = (identity["vendor_code"].to_bytes(3, "little") + bytes([identity["model"], identity["version"]])
            + identity["serial"].to_bytes(4, "little") + bytes(identity["firmware"]))
    c = frame(pd_address, 2, 0x61, b"\x00", scb=b"\x02\x17", session=s, is_command=True, encrypt=True)
    r = frame(reply_address, 2, 0x45, pdid, scb=b"\x02\x18", session=s, is_command=False, encrypt=True)
    exchange("ID (SCS_17) -> PDID (SCS_18)", c, r)
    # seq 3: POLL whose MAC is wrong in one bit -> NAK 06 in plain text; the PD drops the channel.
    c = frame(pd_address, 3, 0x60, scb=b"\x02\x15", session=s, is_command=True, corrupt_mac=True)
    r = frame(reply_address, 3, 0x41, b"\x06")
    exchange("POLL with a wrong MAC -> NAK 06 (plain, channel dropped)", c, r)
    # seq 1: a POLL with a MAC again: there is no channel now -> NAK 06.
    stale = Session(scbk, rnd_a, rnd_b)
    stale.last_reply_mac = s.last_reply_mac
    c = frame(pd_address, 1, 0x60, scb=b"\x02\x15", session=stale, is_command=True)
    r = frame(reply_address, 1, 0x41, b"\x06")
    exchange("POLL (SCS_15) after the channel was dropped -> NAK 06", c, r)

    # A second PD, in install mode with no key yet, at address 0, enrolled by a panel: SCBK-D session,
    # KEYSET with the panel's key, then a new session with that key.
    new_key = bytes.fromhex("00112233445566778899AABBCCDDEEFF")
    rnd_a2 = bytes.fromhex("C0C1C2C3C4C5C6C7")
    install = []

    def install_exchange(note, command, reply):
        install.append({"note": note, "command": command.hex().upper(), "reply": reply.hex().upper()})

    # seq 0: CHLNG for the SCBK (selector 1): there is none -> NAK 06.
    install_exchange("CHLNG for an SCBK the PD does not have -> NAK 06",
                     frame(0, 0, 0x76, rnd_a2, scb=b"\x03\x11\x01"), frame(0x80, 0, 0x41, b"\x06"))
    # seq 1: CHLNG for SCBK-D (selector 0) -> CCRYPT with selector 0.
    d = Session(bytes(range(0x30, 0x40)), rnd_a2, rnd_b)
    install_exchange("CHLNG for SCBK-D -> CCRYPT",
                     frame(0, 1, 0x76, rnd_a2, scb=b"\x03\x11\x00"),
                     frame(0x80, 1, 0x76, cuid + rnd_b + d.client_cryptogram, scb=b"\x03\x12\x00"))
    # seq 2: SCRYPT with a cryptogram from another key -> NAK 06; the handshake is over.
    wrong = Session(scbk, rnd_a2, rnd_b)
    install_exchange("SCRYPT with a cryptogram from another key -> NAK 06",
                     frame(0, 2, 0x77, wrong.server_cryptogram, scb=b"\x03\x13\x00"), frame(0x80, 2, 0x41, b"\x06"))
    # seq 3, 1: the handshake again, properly.
    install_exchange("CHLNG for SCBK-D again -> CCRYPT",
                     frame(0, 3, 0x76, rnd_a2, scb=b"\x03\x11\x00"),
                     frame(0x80, 3, 0x76, cuid + rnd_b + d.client_cryptogram, scb=b"\x03\x12\x00"))
    install_exchange("SCRYPT -> RMAC_I (SCBK-D)",
                     frame(0, 1, 0x77, d.server_cryptogram, scb=b"\x03\x13\x00"),
                     frame(0x80, 1, 0x78, d.rmac_i, scb=b"\x03\x14\x01"))
    # seq 2: KEYSET, encrypted: key type 1 (SCBK), length 16, the key -> ACK with a MAC.
    c = frame(0, 2, 0x75, b"\x01\x10" + new_key, scb=b"\x02\x17", session=d, is_command=True, encrypt=True)
    r = frame(0x80, 2, 0x40, scb=b"\x02\x16", session=d, is_command=False)
    install_exchange("KEYSET (SCS_17) -> ACK (SCS_16)", c, r)
    # seq 3: the panel opens a channel with the new key (selector 1) -> CCRYPT from the new key.
    n = Session(new_key, rnd_a2, rnd_b)
    install_exchange("CHLNG for the new SCBK -> CCRYPT",
                     frame(0, 3, 0x76, rnd_a2, scb=b"\x03\x11\x01"),
                     frame(0x80, 3, 0x76, cuid + rnd_b + n.client_cryptogram, scb=b"\x03\x12\x01"))
    install_exchange("SCRYPT -> RMAC_I (new SCBK)",
                     frame(0, 1, 0x77, n.server_cryptogram, scb=b"\x03\x13\x01"),
                     frame(0x80, 1, 0x78, n.rmac_i, scb=b"\x03\x14\x01"))
    # seq 2: SCBK-D no longer works: install mode ended with the KEYSET.
    install_exchange("CHLNG for SCBK-D after KEYSET -> NAK 06",
                     frame(0, 2, 0x76, rnd_a2, scb=b"\x03\x11\x00"), frame(0x80, 2, 0x41, b"\x06"))

    # The PD at address 5 with the SCBK again, a fresh session (RND.A 3), and a CP that sends data in
    # clear with only a MAC (SCS_15). Inside the channel data must come encrypted (SCS_17): every such
    # command is NAK 06 (sent inside the channel: MAC, data encrypted, SCS_18) and not acted on; a POLL
    # (no data) with SCS_15 is fine, and the chain goes on.
    rnd_a3 = bytes.fromhex("D0D1D2D3D4D5D6D7")
    t = Session(scbk, rnd_a3, rnd_b)
    attacker_key = bytes.fromhex("DEADBEEFDEADBEEFDEADBEEFDEADBEEF")
    rotated_key = bytes.fromhex("0F1E2D3C4B5A69788796A5B4C3D2E1F0")
    scs15 = []

    def scs15_exchange(note, command, reply):
        scs15.append({"note": note, "command": command.hex().upper(), "reply": reply.hex().upper()})

    scs15_exchange("CHLNG -> CCRYPT",
                   frame(pd_address, 0, 0x76, rnd_a3, scb=b"\x03\x11\x01"),
                   frame(reply_address, 0, 0x76, cuid + rnd_b + t.client_cryptogram, scb=b"\x03\x12\x01"))
    scs15_exchange("SCRYPT -> RMAC_I",
                   frame(pd_address, 1, 0x77, t.server_cryptogram, scb=b"\x03\x13\x01"),
                   frame(reply_address, 1, 0x78, t.rmac_i, scb=b"\x03\x14\x01"))
    c = frame(pd_address, 2, 0x75, b"\x01\x10" + attacker_key, scb=b"\x02\x15", session=t, is_command=True)
    r = frame(reply_address, 2, 0x41, b"\x06", scb=b"\x02\x18", session=t, is_command=False, encrypt=True)
    scs15_exchange("KEYSET, key in clear (SCS_15) -> NAK 06 (SCS_18)", c, r)
    c = frame(pd_address, 3, 0x69, led, scb=b"\x02\x15", session=t, is_command=True)
    r = frame(reply_address, 3, 0x41, b"\x06", scb=b"\x02\x18", session=t, is_command=False, encrypt=True)
    scs15_exchange("LED in clear (SCS_15) -> NAK 06 (SCS_18)", c, r)
    c = frame(pd_address, 1, 0xA7, b"\x10\x27", scb=b"\x02\x15", session=t, is_command=True)
    r = frame(reply_address, 1, 0x41, b"\x06", scb=b"\x02\x18", session=t, is_command=False, encrypt=True)
    scs15_exchange("KEEPACTIVE in clear (SCS_15) -> NAK 06 (SCS_18)", c, r)
    c = frame(pd_address, 2, 0x60, scb=b"\x02\x15", session=t, is_command=True)
    r = frame(reply_address, 2, 0x40, scb=b"\x02\x16", session=t, is_command=False)
    scs15_exchange("POLL (SCS_15) -> ACK (SCS_16)", c, r)
    c = frame(pd_address, 3, 0x75, b"\x01\x10" + rotated_key, scb=b"\x02\x17", session=t, is_command=True, encrypt=True)
    r = frame(reply_address, 3, 0x40, scb=b"\x02\x16", session=t, is_command=False)
    scs15_exchange("KEYSET, encrypted (SCS_17) -> ACK (SCS_16)", c, r)

    # A PD in install mode that already has a key (the SCBK) at address 0: a device opening the channel
    # with SCBK-D is refused at the CHLNG, its SCRYPT finds no handshake, and its KEYSET (plain, or with a
    # MAC from the SCBK-D session it never got) is refused too.
    rnd_a4 = bytes.fromhex("E0E1E2E3E4E5E6E7")
    dd = Session(bytes(range(0x30, 0x40)), rnd_a4, rnd_b)
    takeover = []

    def takeover_exchange(note, command, reply):
        takeover.append({"note": note, "command": command.hex().upper(), "reply": reply.hex().upper()})

    takeover_exchange("CHLNG for SCBK-D while a key is installed -> NAK 06",
                      frame(0, 0, 0x76, rnd_a4, scb=b"\x03\x11\x00"), frame(0x80, 0, 0x41, b"\x06"))
    takeover_exchange("SCRYPT (SCBK-D) without a handshake -> NAK 06",
                      frame(0, 1, 0x77, dd.server_cryptogram, scb=b"\x03\x13\x00"), frame(0x80, 1, 0x41, b"\x06"))
    takeover_exchange("KEYSET (SCS_17, SCBK-D session) without a channel -> NAK 06",
                      frame(0, 2, 0x75, b"\x01\x10" + attacker_key, scb=b"\x02\x17", session=dd, is_command=True,
                            encrypt=True),
                      frame(0x80, 2, 0x41, b"\x06"))
    takeover_exchange("KEYSET in plain text -> NAK 06",
                      frame(0, 3, 0x75, b"\x01\x10" + attacker_key), frame(0x80, 3, 0x41, b"\x06"))

    json.dump({
        "generator": "Tests/ScanGateTests/Peers/osdp_sc_vectors.py (PyPI cryptography)",
        "scbk": scbk.hex().upper(), "rnd_a": rnd_a.hex().upper(), "rnd_b": rnd_b.hex().upper(),
        "identity": identity, "cuid": cuid.hex().upper(), "address": pd_address, "card": card.hex().upper(),
        "s_enc": s.s_enc.hex().upper(), "s_mac1": s.s_mac1.hex().upper(), "s_mac2": s.s_mac2.hex().upper(),
        "client_cryptogram": s.client_cryptogram.hex().upper(),
        "server_cryptogram": s.server_cryptogram.hex().upper(),
        "rmac_i": s.rmac_i.hex().upper(),
        "crc_check_123456789": "%04X" % crc16_aug_ccitt(b"123456789"),
        "exchanges": exchanges,
        "install_new_key": new_key.hex().upper(),
        "install_exchanges": install,
        "scs15_rnd_a": rnd_a3.hex().upper(),
        "scs15_attacker_key": attacker_key.hex().upper(),
        "scs15_rotated_key": rotated_key.hex().upper(),
        "scs15_exchanges": scs15,
        "takeover_exchanges": takeover,
    }, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
