module "m" {
  source = "./mod"
}

module "o" {
  source = "./mod"
}
