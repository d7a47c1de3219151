"""The disk writer's IRQs (``isolation_bench/disk_irq.py``): found above its block device in a
sysfs tree laid out as the kernel's, and steered on a fake ``/proc/irq``."""

from __future__ import annotations

from pathlib import Path

from isolation_bench.disk_irq import irqs_of, steer


def tree(root: Path) -> Path:
    """This host's shape: a virtio disk (vda) on PCI function 0000:00:02.0, MSI-X vectors
    35 and 36."""
    pci = root / "devices/pci0000:00/0000:00:02.0"
    block = pci / "virtio1/block/vda"
    block.mkdir(parents=True)
    (pci / "msi_irqs").mkdir()
    for irq in ("36", "35"):
        (pci / "msi_irqs" / irq).write_text("msix\n")
    return block


def test_a_block_devices_irqs_are_its_pci_functions_msi_vectors(tmp_path: Path) -> None:
    assert irqs_of(tree(tmp_path), stop=tmp_path) == [35, 36]


def test_a_device_without_msi_gives_its_legacy_irq(tmp_path: Path) -> None:
    block = tmp_path / "devices/platform/disk/block/sda"
    block.mkdir(parents=True)
    (tmp_path / "devices/platform/disk/irq").write_text("14\n")
    assert irqs_of(block, stop=tmp_path) == [14]


def test_a_virtual_device_has_no_irq(tmp_path: Path) -> None:
    block = tmp_path / "devices/virtual/block/zram0"
    block.mkdir(parents=True)
    (tmp_path / "devices/virtual/irq").write_text("0\n")  # no IRQ: 0
    assert irqs_of(block, stop=tmp_path) == []


def test_steering_writes_each_affinity_and_says_what_refused(tmp_path: Path) -> None:
    for irq in (35, 36):
        (tmp_path / str(irq)).mkdir()
        (tmp_path / str(irq) / "smp_affinity_list").write_text("0-1\n")
        (tmp_path / str(irq) / "effective_affinity_list").write_text("1\n")
    steered, refused = steer([35, 36, 99], "0", proc_irq=tmp_path)
    assert [(s.irq, s.before, s.delivered_before, s.after) for s in steered] == [
        (35, "0-1", "1", "0"), (36, "0-1", "1", "0")]
    assert "IRQ 36: affinity 0-1 (delivered on 1) -> 0" in steered[1].describe()
    assert len(refused) == 1
    assert refused[0].startswith("IRQ 99: ")
