from grader import hints
from grader.labs.conv3d import conv3d_lab, pitches
from grader.labs.model import Kernel, Param, Role

LAB = conv3d_lab(
    "conv3d-pitched",
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
    "As conv3d, but every row is padded to a pitch in bytes; input and output pitches differ.",
    derive=pitches,
    hints=(hints.pitch_ignored,),
)
