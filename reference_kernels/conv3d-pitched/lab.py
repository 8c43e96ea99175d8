"""3D convolution over pitched rows: the rows of N and P are padded to pitches in bytes,
which differ between input and output."""

from grader.judge import hints
from grader.labs.convolution import pitches, volume_lab
from grader.model.lab import Kernel, Param, Role

LAB = volume_lab(
    Kernel(
        "conv3d_pitched",
        (
            Param("N", "const float*", Role.INPUT, pitch="pitchN"),
            Param("P", "float*", Role.OUTPUT, pitch="pitchP"),
            Param("pitchN", "size_t", Role.SCALAR),
            Param("pitchP", "size_t", Role.SCALAR),
            Param("W", "int", Role.SCALAR),
            Param("H", "int", Role.SCALAR),
            Param("D", "int", Role.SCALAR),
        ),
    ),
    "3D convolution over pitched rows",
    "Same-size 3D convolution; every row is padded to a pitch in bytes, and input and "
    "output pitches differ.",
    derive=pitches,
    hints=(hints.pitch_ignored,),
)
