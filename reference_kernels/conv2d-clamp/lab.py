"""2D convolution with the mask in constant memory; ghost cells clamp to the edge."""

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
    "clamp",
    "2D convolution, clamped edges",
    "Same-size output; a ghost cell takes the value of the nearest pixel on the edge.",
)
