"""3D convolution with the mask in constant memory; ghost cells count as 0."""

from grader.labs.convolution import volume_lab
from grader.model.lab import Kernel, Param, Role

LAB = volume_lab(
    Kernel(
        "conv3d",
        (
            Param("N", "const float*", Role.INPUT),
            Param("P", "float*", Role.OUTPUT),
            Param("W", "int", Role.SCALAR),
            Param("H", "int", Role.SCALAR),
            Param("D", "int", Role.SCALAR),
        ),
    ),
    "3D convolution, constant-memory mask",
    "Same-size output over a W x H x D volume; ghost cells count as 0.",
)
