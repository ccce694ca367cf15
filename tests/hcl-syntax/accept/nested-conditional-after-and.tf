# A conditional whose true branch is itself a conditional, after a logical AND.
locals {
  n = true && true ? true ? 1 : 2 : 0
}
