module "m" {
  depends_on = [module.o]
}
