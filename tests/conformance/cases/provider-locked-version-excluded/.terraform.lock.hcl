provider "registry.terraform.io/hashicorp/null" {
  version = "2.1.2"
  hashes = [
    "h1:CFnENdqQu4g3LJNevA32aDxcUz2qGkRGQpFfkI8TCdE=",
  ]
}
