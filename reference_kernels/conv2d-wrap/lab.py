"""2D convolution with the mask in constant memory; the image wraps around."""

from grader.labs.convolution import image_lab
from grader.model.lab import Kernel, Param, Role

KERNEL = Kernel(
    "conv2d",
    (
        Param("N", "const float*", Role.INPUT),
        Param("P", "float*", Role.OUTPUT),
        Param("Width", "int", Role.SCALAR),
        Param("Height", "int", Role.SCALAR),
    ),
)

LAB = image_lab(
    KERNEL,
    "wrap",
    "2D convolution, wrapped edges",
    "Same-size output; the image repeats periodically, so ghost cells wrap around.",
)
