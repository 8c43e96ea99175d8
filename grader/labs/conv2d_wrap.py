from grader.labs.conv2d import conv2d_lab

LAB = conv2d_lab(
    "conv2d-wrap",
    "wrap",
    "2D convolution, wrapped edges",
    "Same-size output; the image repeats periodically, so ghost cells wrap around.",
)
