module "m" {
  source     = "./mod"
  depends_on = [module.o]
}

module "o" {
  source = "./mod"
}
