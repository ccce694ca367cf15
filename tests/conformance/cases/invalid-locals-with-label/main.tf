locals "x" {}
