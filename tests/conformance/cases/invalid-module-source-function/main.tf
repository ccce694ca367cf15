module "m" {
  source = format("./%s", "m")
}
