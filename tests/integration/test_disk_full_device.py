"""A full disk that is really full: sluice's data dir on a small tmpfs mount, filled to the last
page by a file beside it (test_disk_faults.py injects ENOSPC with the shim instead). Produce is
refused with KAFKA_STORAGE_ERROR and REST 507 while nothing is written torn, reads and the
acknowledged records stay, writes resume once the file is removed, and after kill -9 the log
opens with nothing corrupt. Mounting needs root (CAP_SYS_ADMIN); without it the test is
skipped and says why."""
import base64
import errno
import os
import subprocess
import sys

import pytest
import requests
from confluent_kafka import KafkaError

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "faults"))
from harness import wait_for  # noqa: E402
from node import Node  # noqa: E402
from test_disk_faults import Disk  # noqa: E402

MOUNT_BYTES = 48 << 20


class DeviceDisk(Disk):
    """A sluice whose data dir is the whole of a small tmpfs."""

    def __init__(self, mount):
        self.mount = mount
        self.data = os.path.join(mount, "data")
        os.makedirs(self.data)
        self.node = Node(self.data, settings={"num.partitions": "1"}, proxies=False)

    def fill(self):
        """Writes a file until the device has no page left; returns its size."""
        path = os.path.join(self.mount, "filler")
        written = 0
        chunk = b"\0" * 65536
        with open(path, "wb", buffering=0) as f:
            while True:
                try:
                    n = f.write(chunk)
                except OSError as e:
                    assert e.errno == errno.ENOSPC, e
                    break
                written += n
                if n < len(chunk):
                    break
            # Whatever still fits in smaller pieces, to the last page.
            for size in (4096, 512, 1):
                while True:
                    try:
                        if f.write(b"\0" * size) < size:
                            break
                    except OSError:
                        break
        return written

    def free(self):
        os.remove(os.path.join(self.mount, "filler"))


@pytest.fixture
def device(tmp_path):
    mount = str(tmp_path / "mnt")
    os.makedirs(mount)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={MOUNT_BYTES}", "tmpfs", mount],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {r.stderr.strip()}")
    d = DeviceDisk(mount)
    try:
        d.node.start()
        yield d
    finally:
        d.node.close()
        subprocess.run(["umount", "-l", mount], capture_output=True)


def test_a_really_full_device_refuses_writes_keeps_reads_and_recovers(device):
    device.create_topic("dev")
    acked = [b"a%d" % i for i in range(20)]
    assert device.produce("dev", acked) == [None] * 20
    p = device.producer()
    assert device.fill() > 0

    # Records bigger than any page left: each needs new pages, which the device has not got.
    big = [b"x" * 200_000 + b"%d" % i for i in range(3)]
    refused = device.produce("dev", big, p)
    assert refused == [KafkaError.KAFKA_STORAGE_ERROR] * 3, refused
    wait_for(lambda: device.node.find("appends are refused until space returns"), 30,
             "the full-disk line")
    assert device.read_all("dev") == acked
    r = requests.post(f"{device.node.http_url}/topics/dev", timeout=30,
                      headers={"Content-Type": "application/vnd.kafka.binary.v2+json"},
                      json={"records": [{"value": base64.b64encode(big[0]).decode()}]})
    assert r.status_code == 507, r.text
    assert device.node.alive()

    device.free()
    assert device.produce("dev", [b"b0", b"b1"], p) == [None, None]
    wait_for(lambda: device.node.find("dev-0: appends resumed"), 30, "appends to resume")
    assert device.read_all("dev") == acked + [b"b0", b"b1"]

    device.node.kill()
    device.node.start()
    assert device.read_all("dev") == acked + [b"b0", b"b1"]
    assert not device.node.find("corrupt"), device.node.find("corrupt")
    assert not device.node.find("truncated"), device.node.find("truncated")
