terraform {
  backend "local" "x" {}
}
