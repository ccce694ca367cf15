locals {
  x = true && true ? [true ? "b" : ""] : []
}
