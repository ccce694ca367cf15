locals {
  x = 1
